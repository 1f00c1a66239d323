"""The provisioned tree split into the card's partitions (see :mod:`provisioning.image.spec`).

- the shared FAT partition (a folder given to genimage): ``autoboot.txt`` with slot A
  committed, and the venue file's template (what an installer edits);
- slot A's boot partition, and every bundle's boot image: ``/boot/firmware`` (kernel,
  initramfs, device trees) with ``rauc.slot=A`` on its ``cmdline.txt``;
- the data partition: ``/data/mirror`` (what was ``/var/lib/mirror``: the settings,
  identities, password and certificates made later) and ``/data/journal``, bound back to
  their places by ``/etc/fstab``. The models are part of a version, so they stay in the
  root (``/opt/mirror/models``) and the data folder links to them: an update brings its own;
- the root: the rest, with empty mount points.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from provisioning.errors import ImageError
from provisioning.image.spec import DATA_MOUNT, SLOTS, partuuid
from provisioning.image.tryboot import BootSlots, autoboot_text
from provisioning.layout import DATA_DIR

logger = logging.getLogger(__name__)

VENUE_NAME = "mirror.yaml"
MODELS_IN_ROOT = "/opt/mirror/models"
JOURNAL = "/var/log/journal"


def _inside(root: Path, path: str) -> Path:
    return root / path.lstrip("/")


def _move_out(root: Path, path: str, dest: Path) -> None:
    """Move the folder ``path`` of the tree to ``dest``, leaving an empty folder (a mount
    point) of the same owner and mode in its place."""
    source = _inside(root, path)
    source.mkdir(parents=True, exist_ok=True)
    info = source.stat()
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.rename(source, dest)
    source.mkdir()
    os.chown(source, info.st_uid, info.st_gid)
    source.chmod(info.st_mode & 0o7777)


def slot_cmdline(text: str, slot: str) -> str:
    """``cmdline.txt`` for ``slot``: its root by PARTUUID and ``rauc.slot=``."""
    words = [w for w in text.split() if not w.startswith(("root=", "rauc.slot="))]
    return " ".join([*words, f"root=PARTUUID={partuuid(SLOTS[slot][1])}", f"rauc.slot={slot}"])


def arrange(root: Path, shared: Path) -> None:
    firmware = _inside(root, "/boot/firmware")
    cmdline = firmware / "cmdline.txt"
    if not cmdline.is_file():
        raise ImageError(f"{cmdline} missing: raspi-firmware wrote no kernel command line")
    cmdline.write_text(slot_cmdline(cmdline.read_text(encoding="utf-8"), "A") + "\n")
    shared.mkdir(parents=True, exist_ok=True)
    shutil.move(firmware / VENUE_NAME, shared / VENUE_NAME)
    (shared / "autoboot.txt").write_text(autoboot_text(BootSlots(committed="A")))
    data = _inside(root, DATA_MOUNT)
    data.mkdir(mode=0o755, exist_ok=True)
    _move_out(root, str(DATA_DIR), data / "mirror")
    models = data / "mirror" / "models"
    if models.is_dir():
        in_root = _inside(root, MODELS_IN_ROOT)
        in_root.parent.mkdir(parents=True, exist_ok=True)
        os.rename(models, in_root)
        models.symlink_to(MODELS_IN_ROOT)
    _move_out(root, JOURNAL, data / "journal")
