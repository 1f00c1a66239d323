"""The card image and its update bundle by genimage, from the split tree of :mod:`ab_layout`.

genimage fills each file system (``/boot/firmware`` into the slot's FAT boot image,
``/data`` into the data partition, the rest into the ext4 root by ``mke2fs -d``; the
shared FAT partition from a folder of its own) and writes the MBR with the layout of
:mod:`provisioning.image.spec`: slot A filled, slot B empty until the first update. With
the installer's key and certificate it also writes the RAUC bundle of the same boot and
root images (``rauc bundle``, signed); nothing here partitions, formats or signs by hand.

:mod:`provisioning.image.ab_layout` is the module that splits the tree.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from provisioning.image import rauc_files
from provisioning.image.logged import run_logged
from provisioning.image.spec import (
    BOOT_LABEL,
    DATA_LABEL,
    DATA_MOUNT,
    DISK_SIGNATURE,
    EXTENDED_PARTITION,
    MIB,
    ROOT_LABEL,
    SLOT_BOOT_LABEL,
    ImageSpec,
)

logger = logging.getLogger(__name__)

GENIMAGE_TIMEOUT_S = 1800
# fixed stamps and UUIDs would make two images of one device the same file system: kept
# random (ext4's UUID, FAT's serial), so two cards are told apart; the contents decide
# what the manifest lists. The MBR's disk signature is fixed (the slots' PARTUUIDs).


@dataclass(frozen=True)
class Signing:
    """The installer's key and certificate, and what the bundle says of itself."""

    key: Path
    cert: Path
    version: str
    build: str


def _bundle_section(bundle_name: str, signing: Signing, hook: Path) -> str:
    manifest = rauc_files.bundle_manifest(signing.version, signing.build)
    return f"""
image {bundle_name} {{
    rauc {{
        file {rauc_files.HOOK} {{ image = "{hook}" }}
        files = {{ "{rauc_files.BOOT_IMAGE}", "{rauc_files.ROOT_IMAGE}" }}
        key = "{signing.key}"
        cert = "{signing.cert}"
        manifest = "{manifest}"
    }}
}}
"""


def render_config(
    spec: ImageSpec,
    image_name: str,
    shared_files: list[str],
    bundle: tuple[str, Signing, Path] | None = None,
    card: bool = True,
) -> str:
    boot_mib = spec.boot_bytes // MIB
    root_mib = spec.root_bytes // MIB
    files = ", ".join(f'"{name}"' for name in shared_files)
    card_text = f"""\
image shared.vfat {{
    vfat {{
        label = "{BOOT_LABEL}"
        files = {{ {files} }}
    }}
    size = {spec.shared_bytes // MIB}M
    temporary = true
}}
"""
    slot_text = f"""
image {rauc_files.BOOT_IMAGE} {{
    vfat {{
        label = "{SLOT_BOOT_LABEL}"
    }}
    mountpoint = "/boot/firmware"
    size = {boot_mib}M
    temporary = true
}}

image {rauc_files.ROOT_IMAGE} {{
    ext4 {{
        label = "{ROOT_LABEL}"
        use-mke2fs = true
    }}
    mountpoint = "/"
    size = {root_mib}M
    temporary = true
}}
"""
    card_text += f"""
image data.ext4 {{
    ext4 {{
        label = "{DATA_LABEL}"
        use-mke2fs = true
    }}
    mountpoint = "{DATA_MOUNT}"
    size = {spec.data_bytes // MIB}M
    temporary = true
}}

image {image_name} {{
    hdimage {{
        partition-table-type = "mbr"
        disk-signature = 0x{DISK_SIGNATURE:08x}
        extended-partition = {EXTENDED_PARTITION}
    }}
    partition shared {{
        partition-type = 0xC
        bootable = true
        offset = 4M
        image = "shared.vfat"
    }}
    partition boot-a {{
        partition-type = 0xC
        image = "{rauc_files.BOOT_IMAGE}"
    }}
    partition boot-b {{
        partition-type = 0xC
        size = {boot_mib}M
    }}
    partition root-a {{
        partition-type = 0x83
        image = "{rauc_files.ROOT_IMAGE}"
    }}
    partition root-b {{
        partition-type = 0x83
        size = {root_mib}M
    }}
    partition data {{
        partition-type = 0x83
        image = "data.ext4"
    }}
}}
"""
    text = (card_text if card else "") + slot_text
    if bundle is not None:
        text += _bundle_section(*bundle)
    return text


def run_genimage(
    spec: ImageSpec,
    root: Path,
    out: Path,
    *,
    shared: Path,
    work: Path,
    log: Path,
    signing: Signing | None = None,
    card: bool = True,
) -> Path | None:
    """Write ``out`` (and, when signing, the bundle ``out`` with ``.raucb``: returned) from the
    tree ``root`` and the shared partition's folder ``shared`` (``work`` holds genimage's
    temporary files); an old ``out`` or bundle is replaced only by a finished one."""
    tmp = work / "genimage-tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    inputs = work / "genimage-input"
    shutil.rmtree(inputs, ignore_errors=True)
    inputs.mkdir()
    shared_files = sorted(path.name for path in shared.iterdir())
    for name in shared_files:
        shutil.copy2(shared / name, inputs / name)
    bundle_out = out.with_suffix(".raucb")  # (``out`` itself when there is no card)
    bundle = None
    if signing is not None:
        hook = inputs / rauc_files.HOOK
        hook.write_text(rauc_files.hook_script())
        hook.chmod(0o755)
        bundle = (bundle_out.name, signing, Path(rauc_files.HOOK))
    config = work / "genimage.cfg"
    config.write_text(render_config(spec, out.name, shared_files, bundle, card))
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
    if card:
        (made / out.name).replace(out)
    if signing is None:
        return None
    (made / bundle_out.name).replace(bundle_out)
    return bundle_out
