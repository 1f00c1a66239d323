"""What runs on this device: the installed version and the A/B slot it booted from.

The slot is the one RAUC sees: the bootloader names it on the kernel command line as
``rauc.slot=NAME`` (the first such word counts, as RAUC reads it); ``none`` when the
line has no such word (a device not set up for A/B updates, a development machine).
The command line's path is an argument, so tests read a file of their own.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

logger = logging.getLogger(__name__)

DISTRIBUTION = "face-mirror"
PROC_CMDLINE = Path("/proc/cmdline")
SLOT_KEY = "rauc.slot"
NO_SLOT = "none"
UNKNOWN_VERSION = "unknown"


@dataclass(frozen=True)
class BuildInfo:
    """The installed package's ``version`` and the booted ``slot`` (or ``none``)."""

    version: str
    slot: str


def booted_slot(cmdline: Path = PROC_CMDLINE) -> str:
    """``NAME`` of the first ``rauc.slot=NAME`` on the kernel command line, else ``none``."""
    try:
        words = cmdline.read_text(encoding="utf-8", errors="replace").split()
    except OSError as exc:
        logger.debug("no kernel command line at %s: %s", cmdline, exc)
        return NO_SLOT
    for word in words:
        key, _, value = word.partition("=")
        if key == SLOT_KEY and value:
            return value
    return NO_SLOT


@functools.cache
def installed_version() -> str:
    """The version of the installed ``face-mirror`` distribution (its metadata)."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return UNKNOWN_VERSION


def build_info(cmdline: Path = PROC_CMDLINE) -> BuildInfo:
    return BuildInfo(installed_version(), booted_slot(cmdline))
