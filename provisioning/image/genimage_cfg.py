"""The partitioned image by genimage: an MBR with a FAT boot partition and an ext4 root.

genimage fills each file system from the root tree (``/boot/firmware`` into the
FAT partition, the rest into ext4 by ``mke2fs -d``) and writes the partition table;
nothing here partitions or formats by hand. The first 4 MiB stay free, and a
later A/B updater (RAUC) can add its slots by a new genimage config.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from provisioning.image.logged import run_logged
from provisioning.image.spec import BOOT_LABEL, MIB, ROOT_LABEL, ImageSpec

logger = logging.getLogger(__name__)

GENIMAGE_TIMEOUT_S = 1800
# fixed stamps and UUIDs would make two images of one device the same file system: kept
# random (ext4's UUID, FAT's serial), so two cards are told apart; the contents decide
# what the manifest lists.


def render_config(spec: ImageSpec, image_name: str) -> str:
    boot_mib = spec.boot_bytes // MIB
    root_mib = spec.root_bytes // MIB
    return f"""\
image boot.vfat {{
    vfat {{
        label = "{BOOT_LABEL}"
    }}
    mountpoint = "/boot/firmware"
    size = {boot_mib}M
    temporary = true
}}

image root.ext4 {{
    ext4 {{
        label = "{ROOT_LABEL}"
        use-mke2fs = true
    }}
    mountpoint = "/"
    size = {root_mib}M
    temporary = true
}}

image {image_name} {{
    hdimage {{
        partition-table-type = "mbr"
    }}
    partition firmware {{
        partition-type = 0xC
        bootable = true
        offset = 4M
        image = "boot.vfat"
    }}
    partition root {{
        partition-type = 0x83
        image = "root.ext4"
    }}
}}
"""


def run_genimage(spec: ImageSpec, root: Path, out: Path, work: Path, log: Path) -> None:
    """Write ``out`` from the tree ``root`` (``work`` holds genimage's temporary files); an
    old ``out`` is replaced only by a finished image."""
    config = work / "genimage.cfg"
    config.write_text(render_config(spec, out.name))
    tmp = work / "genimage-tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    inputs = work / "genimage-input"
    inputs.mkdir(exist_ok=True)
    made = work / "genimage-out"
    shutil.rmtree(made, ignore_errors=True)
    made.mkdir()
    cmd = [
        "genimage",
        "--config",
        str(config),
        "--rootpath",
        str(root),
        "--tmppath",
        str(tmp),
        "--inputpath",
        str(inputs),
        "--outputpath",
        str(made),
    ]
    try:
        run_logged("genimage", cmd, log, GENIMAGE_TIMEOUT_S)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (made / out.name).replace(out)
