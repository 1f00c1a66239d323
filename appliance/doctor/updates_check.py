"""``mirror doctor``'s updates section: both A/B slots as RAUC sees them, and the last
status the update installer wrote (``appliance.updates``).

RAUC describes the running system only, so a probe of another root (``--root``) does
not ask it. A system without RAUC was installed without the image: it has no slots.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from appliance.device.report import SlotReport, UpdatesReport, UpdateStatusReport
from appliance.updates.queue import read_status
from appliance.updates.recent import under_way
from appliance.updates.slots import SlotsStatus, UpdateUnavailableError, slots_status

logger = logging.getLogger(__name__)

NO_SLOTS = "no A/B slots (installed without the image)"
NOT_LIVE = "not read: the doctor probes another root (--root)"

SlotsReader = Callable[[], SlotsStatus]


def check_updates(
    data_dir: Path, *, live: bool, read_slots: SlotsReader = slots_status
) -> UpdatesReport:
    if not live:
        return UpdatesReport(slots=[], detail=NOT_LIVE, last=None)
    status = read_status(data_dir)
    last = None
    if status is not None:
        last = UpdateStatusReport(
            state=status.state,
            message=status.message,
            percent=status.percent,
            at_unix=status.at,
            under_way=under_way(status),
        )
    try:
        slots = read_slots()
    except (UpdateUnavailableError, subprocess.TimeoutExpired) as exc:
        detail = NO_SLOTS if shutil.which("rauc") is None else f"RAUC did not answer: {exc}"
        logger.info("doctor: %s", detail)
        return UpdatesReport(slots=[], detail=detail, last=last)
    reports = [
        SlotReport(
            name=slot.name,
            bootname=slot.bootname,
            version=slot.version,
            installed=slot.installed,
            state=slot.state,
            boot_good=slot.boot_good,
            runs=slot.bootname == slots.booted,
            boots_next=slot.bootname == slots.primary,
        )
        for slot in slots.slots
    ]
    return UpdatesReport(slots=reports, detail="", last=last)
