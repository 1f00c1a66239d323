"""Grow the root to fill the card at the first boot: Debian's ``growpart`` (cloud-guest-utils),
then ``resize2fs`` on the mounted ext4 root (online growing). A root that already fills
its disk is left alone (growpart says NOCHANGE)."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

logger = logging.getLogger(__name__)

SYS_BLOCK = Path("/sys/class/block")


def root_partition() -> tuple[str, str, int] | None:
    """(partition device, disk device, partition number) of ``/``; None when not a partition."""
    found = subprocess.run(
        ["findmnt", "--noheadings", "--output", "SOURCE", "/"],
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


def grow_root() -> str:
    """What was done, in words."""
    where = root_partition()
    if where is None:
        return "root is not on a partition: not grown"
    part, disk, number = where
    grown = subprocess.run(
        ["growpart", disk, str(number)], capture_output=True, text=True, check=False
    )
    if grown.returncode == 1 and "NOCHANGE" in grown.stdout:
        return f"{part} already fills {disk}"
    if grown.returncode != 0:
        return f"growpart {disk} {number} failed: {(grown.stderr or grown.stdout).strip()}"
    resized = subprocess.run(["resize2fs", part], capture_output=True, text=True, check=False)
    if resized.returncode != 0:
        return f"resize2fs {part} failed: {resized.stderr.strip()}"
    return f"{part} grown to fill {disk}"
