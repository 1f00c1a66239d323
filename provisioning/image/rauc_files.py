"""What RAUC needs on the card and in a bundle: its slots, the keyring, the backend, the hook.

The image carries ``/etc/rauc/system.conf`` (the four slots of
:mod:`provisioning.image.spec` by PARTUUID, the Pi's tryboot backend of
:mod:`provisioning.image.tryboot`, RAUC's status on the data partition) and only the
installer's public certificate as the keyring: a bundle signed by any other key is
refused by RAUC itself. Every bundle carries a hook that fits the slot it has just
written to its place on the card: the boot slot's ``cmdline.txt`` gets its own root's
PARTUUID and ``rauc.slot=``; the new root gets this device's machine-id and SSH host
keys, so the device stays the same device after the update.
"""

from __future__ import annotations

import logging
from pathlib import Path, PurePosixPath

from provisioning.image.spec import DATA_MOUNT, DISK_SIGNATURE, SLOTS, partuuid
from provisioning.layout import DEFAULT_VENV

logger = logging.getLogger(__name__)

COMPATIBLE = "face-mirror-rpi4"
SYSTEM_CONF = PurePosixPath("/etc/rauc/system.conf")
KEYRING = PurePosixPath("/etc/rauc/keyring.pem")
BACKEND = PurePosixPath("/usr/local/sbin/mirror-rauc-backend")
STATUS_FILE = PurePosixPath(DATA_MOUNT) / "rauc.status"
BOOT_IMAGE = "boot.vfat"
ROOT_IMAGE = "root.ext4"
HOOK = "hook.sh"


def system_conf() -> str:
    slots = []
    for index, (slot, (boot, root)) in enumerate(SLOTS.items()):
        slots.append(
            f"[slot.rootfs.{index}]\ndevice=/dev/disk/by-partuuid/{partuuid(root)}\n"
            f"type=ext4\nbootname={slot}\n"
        )
        slots.append(
            f"[slot.boot.{index}]\ndevice=/dev/disk/by-partuuid/{partuuid(boot)}\n"
            f"type=vfat\nparent=rootfs.{index}\n"
        )
    return (
        "# Written by `mirror image build`: the card's A/B slots (README: Updating a mirror).\n"
        "[system]\n"
        f"compatible={COMPATIBLE}\n"
        "bootloader=custom\n"
        f"statusfile={STATUS_FILE}\n"
        "mountprefix=/run/rauc\n\n"
        "[handlers]\n"
        f"bootloader-custom-backend={BACKEND}\n\n"
        "[keyring]\n"
        f"path={KEYRING}\n\n" + "\n".join(slots)
    )


def backend_script(venv: PurePosixPath = DEFAULT_VENV) -> str:
    return (
        "#!/bin/sh\n"
        "# Written by `mirror image build`: RAUC's boot-slot backend (autoboot.txt, tryboot).\n"
        f'exec {venv}/bin/python -m provisioning.image.tryboot "$@"\n'
    )


def hook_script() -> str:
    """The bundle's slot hook (POSIX sh, run by the RAUC of the running system)."""
    cases = "\n".join(
        f"    boot.{index}) slot={slot}; root={partuuid(root)} ;;"
        for index, (slot, (_boot, root)) in enumerate(SLOTS.items())
    )
    return f"""#!/bin/sh
# Written by `mirror image build`: fits a slot RAUC has just written to its place.
set -eu
[ "$1" = slot-post-install ] || exit 0
case "$RAUC_SLOT_CLASS" in
boot)
  case "$RAUC_SLOT_NAME" in
{cases}
    *) echo "no such boot slot: $RAUC_SLOT_NAME" >&2; exit 1 ;;
  esac
  sed -i -e "s/root=[^ ]*/root=PARTUUID=$root/" -e "s/rauc\\.slot=[^ ]*/rauc.slot=$slot/" \\
    "$RAUC_SLOT_MOUNT_POINT/cmdline.txt"
  grep -q "rauc.slot=$slot" "$RAUC_SLOT_MOUNT_POINT/cmdline.txt"
  ;;
rootfs)
  # the same device after the update: its machine-id and its SSH host keys
  cp /etc/machine-id "$RAUC_SLOT_MOUNT_POINT/etc/machine-id"
  for key in /etc/ssh/ssh_host_*; do
    if [ -e "$key" ]; then cp -p "$key" "$RAUC_SLOT_MOUNT_POINT/etc/ssh/"; fi
  done
  ;;
esac
exit 0
"""


def bundle_manifest(version: str, build: str) -> str:
    return f"""[update]
compatible={COMPATIBLE}
version={version}
build={build}
description=face-mirror {version}

[bundle]
format=verity

[hooks]
filename={HOOK}

[image.rootfs]
filename={ROOT_IMAGE}
hooks=post-install

[image.boot]
filename={BOOT_IMAGE}
hooks=post-install
"""


def add_rauc_files(root: Path, cert: Path | None, venv: PurePosixPath = DEFAULT_VENV) -> None:
    """Write system.conf, the backend and the keyring (the installer's certificate) into
    ``root``; without a certificate the image cannot take a bundle (said in the log)."""

    def write(path: PurePosixPath, text: str, mode: int) -> None:
        host = root / str(path).lstrip("/")
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_text(text, encoding="utf-8")
        host.chmod(mode)

    write(SYSTEM_CONF, system_conf(), 0o644)
    write(BACKEND, backend_script(venv), 0o755)
    if cert is not None:
        write(KEYRING, cert.read_text(encoding="ascii"), 0o644)
    logger.info("RAUC slots on disk %08x; keyring %s", DISK_SIGNATURE, cert or "none")
