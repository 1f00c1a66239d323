"""At every boot of an A/B card (``mirror-update-confirm.service``): keep the slot or go back.

The mirror must be active (``mirror.service`` is ``Type=notify``: active means it sent
READY) and ``/healthz`` must say "ok" within the time limit. Then RAUC marks the booted
slot good, which commits a slot on trial (:mod:`provisioning.image.tryboot`). A slot on
trial that does not get there is marked bad and the device reboots into the committed
slot; a hang on trial is the hardware watchdog's, whose reset boots the committed slot
too. A committed slot that is not healthy stays (there is nothing better to go back to).
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from provisioning.errors import UpdateError
from provisioning.health import Health, wait_healthy
from provisioning.image.tryboot import CMDLINE, booted_slot, read_slots
from provisioning.service import ServiceControl
from provisioning.update import rauc_cli

logger = logging.getLogger(__name__)

BOOT_DIR = Path("/boot/firmware")
REBOOT = ["systemctl", "reboot"]

Say = Callable[[str], None]


@dataclass(frozen=True)
class Verdict:
    slot: str | None
    on_trial: bool
    kept: bool
    said: str
    abandoned: str | None = None  # a slot whose trial did not hold (the firmware came back)


def confirm_boot(
    service: ServiceControl,
    ask: Callable[[], Health],
    timeout_s: float,
    say: Say,
    *,
    boot_dir: Path = BOOT_DIR,
    cmdline: Path = CMDLINE,
    mark: Callable[[bool], None] = rauc_cli.mark,
    reboot: Callable[[], None] = lambda: None,
) -> Verdict:
    slot = booted_slot(cmdline)
    if slot is None:
        return Verdict(None, False, True, "not booted from an A/B slot: nothing to confirm")
    slots = read_slots(boot_dir)
    on_trial = slots.trial == slot and slots.committed != slot
    abandoned = slots.trial if slots.trial not in (None, slot) else None
    say(f"slot {slot} {'on trial' if on_trial else 'committed'}: waiting for the mirror")
    health = wait_healthy(service, ask, timeout_s, say)
    if health.ok:
        try:
            mark(True)  # (the backend records an abandoned trial's slot bad)
            return Verdict(slot, on_trial, True, f"slot {slot} is healthy: kept", abandoned)
        except UpdateError as exc:
            health = Health(False, f"healthy, but not marked good: {exc}")
    if not on_trial:
        said = f"slot {slot} not healthy ({health.said}); kept"
        return Verdict(slot, False, True, said, abandoned)
    try:
        mark(False)
    except UpdateError as exc:
        say(f"cannot mark slot {slot} bad ({exc}); the reboot goes back anyway")
    reboot()
    return Verdict(
        slot,
        True,
        False,
        f"slot {slot} on trial not healthy ({health.said}): back to {slots.committed}",
    )


def reboot_now() -> None:
    subprocess.run(REBOOT, check=False)
