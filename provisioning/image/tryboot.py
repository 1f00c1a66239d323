"""RAUC's boot-slot backend on a Raspberry Pi: the firmware's ``autoboot.txt`` and tryboot.

A Pi 4 has no U-Boot in this image; its firmware picks the boot partition itself.
``autoboot.txt`` on the first FAT partition says which::

    [all]
    tryboot_a_b=1
    boot_partition=2      <- the committed slot: every normal boot
    [tryboot]
    boot_partition=3      <- a slot on trial: only a boot asked for by ``reboot "0 tryboot"``

RAUC calls this as its ``custom`` bootloader backend (``python -m
provisioning.image.tryboot``: small and quick, without the ``mirror`` command's imports;
``system.conf``'s ``bootloader-custom-backend``) with ``get-primary``, ``set-primary SLOT``,
``get-state SLOT``, ``set-state SLOT good|bad`` and ``get-current``:

- ``set-primary B`` after an install puts B on trial (the ``[tryboot]`` section); the
  installer then reboots with the tryboot flag, and the firmware boots B once. Any later
  reset (the hardware watchdog, a power cut, a plain reboot) boots the committed slot;
- ``set-state B good`` (``rauc status mark-good`` once the mirror is healthy on B) commits
  B: it becomes ``[all]``'s partition and the trial ends;
- ``set-state B bad`` ends B's trial (or, when B was committed, commits the other slot);
- the committed slot marked good while another is still on trial means the trial did not
  hold (the firmware came back to the committed slot): the trial slot is recorded bad.

Slots marked bad are kept in ``mirror-slots.json`` beside ``autoboot.txt``. Both files are
replaced whole (a new file, flushed, renamed over the old), so a power cut leaves the old
or the new one, never half of one.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from provisioning.errors import ImageError
from provisioning.image.spec import SLOTS

logger = logging.getLogger(__name__)

AUTOBOOT = "autoboot.txt"
STATE = "mirror-slots.json"
CMDLINE = Path("/proc/cmdline")
SLOT_WORD = re.compile(r"(?:^|\s)rauc\.slot=(\S+)")
PARTITION_LINE = re.compile(r"^\s*boot_partition\s*=\s*(\d+)\s*$")
SECTION_LINE = re.compile(r"^\s*\[(\w+)\]\s*$")


@dataclass
class BootSlots:
    committed: str
    trial: str | None = None
    bad: set[str] = field(default_factory=set)


def _slot_of(partition: int, where: Path) -> str:
    for slot, (boot, _root) in SLOTS.items():
        if boot == partition:
            return slot
    raise ImageError(f"{where}: boot_partition={partition} is not a slot's boot partition")


def _partition(slot: str) -> int:
    if slot not in SLOTS:
        raise ImageError(f"no slot {slot!r}: the slots are {', '.join(SLOTS)}")
    return SLOTS[slot][0]


def other(slot: str) -> str:
    _partition(slot)
    return next(name for name in SLOTS if name != slot)


def read_slots(boot_dir: Path) -> BootSlots:
    """The slots as ``autoboot.txt`` and the state file say; an :class:`ImageError` when
    ``autoboot.txt`` is missing or names no slot."""
    path = boot_dir / AUTOBOOT
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImageError(f"cannot read {path}: {exc}") from exc
    section = "all"
    found: dict[str, int] = {}
    for line in text.splitlines():
        if (header := SECTION_LINE.match(line)) is not None:
            section = header.group(1)
        elif (number := PARTITION_LINE.match(line)) is not None:
            found[section] = int(number.group(1))
    if "all" not in found:
        raise ImageError(f"{path}: no boot_partition in its [all] section")
    committed = _slot_of(found["all"], path)
    trial = _slot_of(found["tryboot"], path) if "tryboot" in found else None
    return BootSlots(committed, trial if trial != committed else None, _read_bad(boot_dir))


def _read_bad(boot_dir: Path) -> set[str]:
    try:
        data = json.loads((boot_dir / STATE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return set()
    except (OSError, ValueError) as exc:
        logger.warning("%s unreadable (%s): no slot taken as bad", boot_dir / STATE, exc)
        return set()
    bad = data.get("bad", []) if isinstance(data, dict) else []
    return {slot for slot in bad if slot in SLOTS}


def autoboot_text(slots: BootSlots) -> str:
    lines = [
        "# Written by the mirror's update backend (RAUC): which slot's boot partition boots.",
        "[all]",
        "tryboot_a_b=1",
        f"boot_partition={_partition(slots.committed)}",
    ]
    if slots.trial is not None:
        lines += ["[tryboot]", f"boot_partition={_partition(slots.trial)}"]
    return "\n".join(lines) + "\n"


def _replace(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.new")
    with temp.open("w", encoding="ascii") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, path)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def write_slots(boot_dir: Path, slots: BootSlots) -> None:
    state = json.dumps({"bad": sorted(slots.bad)}) + "\n"
    _replace(boot_dir / STATE, state)
    _replace(boot_dir / AUTOBOOT, autoboot_text(slots))


def booted_slot(cmdline: Path = CMDLINE) -> str | None:
    """The slot this system booted from: ``rauc.slot=`` on the kernel command line."""
    try:
        found = SLOT_WORD.search(cmdline.read_text(encoding="utf-8"))
    except OSError:
        return None
    return found.group(1) if found else None


def set_primary(slots: BootSlots, slot: str) -> BootSlots:
    _partition(slot)
    slots.bad.discard(slot)
    slots.trial = None if slot == slots.committed else slot
    return slots


def set_state(slots: BootSlots, slot: str, good: bool) -> BootSlots:
    _partition(slot)
    if good:
        if slots.trial is not None and slots.trial != slot:
            logger.warning("slot %s was on trial and did not hold: marked bad", slots.trial)
            slots.bad.add(slots.trial)
        slots.committed, slots.trial = slot, None
        slots.bad.discard(slot)
        return slots
    slots.bad.add(slot)
    if slots.trial == slot:
        slots.trial = None
    elif slots.committed == slot and other(slot) not in slots.bad:
        slots.committed = other(slot)
    return slots


def backend(argv: list[str], boot_dir: Path, cmdline: Path = CMDLINE) -> str:
    """One call of RAUC's custom backend; what to print. An :class:`ImageError` for a call
    it does not know."""
    verb, *args = argv or [""]
    slots = read_slots(boot_dir)
    if verb == "get-primary" and not args:
        return slots.trial or slots.committed
    if verb == "get-current" and not args:
        return booted_slot(cmdline) or slots.committed
    if verb == "get-state" and len(args) == 1:
        _partition(args[0])
        return "bad" if args[0] in slots.bad else "good"
    if verb == "set-primary" and len(args) == 1:
        write_slots(boot_dir, set_primary(slots, args[0]))
        return ""
    if verb == "set-state" and len(args) == 2 and args[1] in ("good", "bad"):
        write_slots(boot_dir, set_state(slots, args[0], args[1] == "good"))
        return ""
    raise ImageError(f"rauc-backend: unknown call {' '.join(argv)!r}")


BOOT_DIR = Path("/boot/firmware")


def main(argv: list[str] | None = None) -> int:
    try:
        said = backend(sys.argv[1:] if argv is None else argv, BOOT_DIR)
    except ImageError as exc:
        print(f"mirror-rauc-backend: {exc}", file=sys.stderr)
        return 1
    if said:
        print(said)
    return 0


if __name__ == "__main__":
    sys.exit(main())
