"""Grow the data partition to fill the card at the first boot; the slots keep their size.

The data partition is the last logical partition, so Debian's ``growpart``
(cloud-guest-utils) grows the extended partition that holds it first, then the data
partition, and ``resize2fs`` grows its mounted ext4 (online). A data partition that
already fills its disk is left alone (growpart says NOCHANGE).
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

from provisioning.image.spec import DATA_MOUNT, EXTENDED_PARTITION

logger = logging.getLogger(__name__)

SYS_BLOCK = Path("/sys/class/block")


def mounted_partition(mount: str = DATA_MOUNT) -> tuple[str, str, int] | None:
    """(partition device, disk device, partition number) mounted at ``mount``; None when
    it is not a partition."""
    found = subprocess.run(
        ["findmnt", "--noheadings", "--output", "SOURCE", "--mountpoint", mount],
        capture_output=True,
        text=True,
        check=False,
    )
    source = found.stdout.strip()
    name = Path(source).name
    number_file = SYS_BLOCK / name / "partition"
    if not source.startswith("/dev/") or not number_file.is_file():
        return None
    disk = (SYS_BLOCK / name).resolve().parent.name
    return source, f"/dev/{disk}", int(number_file.read_text().strip())


def grow_partition(disk: str, number: int) -> str:
    """``growpart`` the partition (its extended partition first when it is a logical one);
    "" when it grew, "nochange" when it already fills the disk, else what failed."""
    steps = [EXTENDED_PARTITION, number] if number > 4 else [number]
    grew = False
    for part in steps:
        done = subprocess.run(
            ["growpart", disk, str(part)], capture_output=True, text=True, check=False
        )
        if done.returncode == 1 and "NOCHANGE" in done.stdout:
            continue
        if done.returncode != 0:
            return f"growpart {disk} {part} failed: {(done.stderr or done.stdout).strip()}"
        grew = True
    return "" if grew else "nochange"


def grow_data() -> str:
    """What was done, in words."""
    where = mounted_partition()
    if where is None:
        return f"{DATA_MOUNT} is not a partition: not grown"
    part, disk, number = where
    grown = grow_partition(disk, number)
    if grown == "nochange":
        return f"{part} already fills {disk}"
    if grown:
        return grown
    resized = subprocess.run(["resize2fs", part], capture_output=True, text=True, check=False)
    if resized.returncode != 0:
        return f"resize2fs {part} failed: {resized.stderr.strip()}"
    return f"{part} grown to fill {disk}"
