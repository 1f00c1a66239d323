"""What the running system must be told after the files change (only when the root is ``/``).

On a mounted image systemd does all of this at the next boot (sysusers,
udev rules, tmpfiles, unit files are read then); on the live system:

- ``systemd-sysusers`` creates the ``mirror`` user and groups now;
- ``udevadm control --reload`` then ``udevadm trigger`` applies the rules to
  the camera and Coral already plugged in;
- ``systemd-tmpfiles --create`` applies the console settings (framebuffer kiosks);
- ``systemctl daemon-reload`` reads the new unit and its wants link.

Each runs when what it reads changed (or, for sysusers, the user is
missing), and is skipped with the reason when its tool is absent.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath

from provisioning.actions import Action, Status
from provisioning.layout import SERVICE_USER, SYSUSERS, TMPFILES, UDEV_RULES, UNIT, Layout

logger = logging.getLogger(__name__)

Which = Callable[[str], str | None]
UDEV_SUBSYSTEMS = ("video4linux", "usb", "apex")
AT_BOOT = "not the running system: systemd does this at boot"


def user_exists(layout: Layout, name: str) -> bool:
    """``name`` is in the root's ``/etc/passwd`` (the running system's when the root is /)."""
    try:
        lines = layout.host(PurePosixPath("/etc/passwd")).read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    return any(line.split(":", 1)[0] == name for line in lines)


def live_actions(
    layout: Layout, changed: set[PurePosixPath], *, which: Which = shutil.which
) -> list[Action]:
    """``changed``: the device paths the plan writes (create or update)."""
    trigger = ["udevadm", "trigger", "--action=change"]
    trigger += [f"--subsystem-match={name}" for name in UDEV_SUBSYSTEMS]
    steps: list[tuple[PurePosixPath, tuple[tuple[str, ...], ...], bool]] = [
        (
            SYSUSERS,
            (("systemd-sysusers", str(SYSUSERS)),),
            SYSUSERS in changed or not user_exists(layout, SERVICE_USER),
        ),
        (UDEV_RULES, (("udevadm", "control", "--reload"), tuple(trigger)), UDEV_RULES in changed),
    ]
    if TMPFILES in changed or layout.host(TMPFILES).is_file():
        steps.append(
            (TMPFILES, (("systemd-tmpfiles", "--create", str(TMPFILES)),), TMPFILES in changed)
        )
    unit_files = {p for p in changed if str(p).startswith("/etc/systemd/")}
    steps.append((UNIT, (("systemctl", "daemon-reload"),), bool(unit_files)))
    return [_action(layout, target, cmds, needed, which) for target, cmds, needed in steps]


def _action(
    layout: Layout,
    target: PurePosixPath,
    commands: Sequence[tuple[str, ...]],
    needed: bool,
    which: Which,
) -> Action:
    names = tuple(" ".join(cmd) for cmd in commands)
    if not layout.is_live():
        return Action("command", target, "deferred", names=names, note=AT_BOOT)
    absent = sorted({cmd[0] for cmd in commands if which(cmd[0]) is None})
    if absent:
        logger.info("skipping %s: %s not found", names[0], ", ".join(absent))
        note = f"{', '.join(absent)} not found here: skipped"
        return Action("command", target, "deferred", names=names, note=note)
    status: Status = "update" if needed else "unchanged"
    return Action("command", target, status, names=names, commands=tuple(commands))
