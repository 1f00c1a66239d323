"""Both A/B slots as RAUC sees them: versions, which one runs, which boots next.

``rauc status`` answers over D-Bus (``rauc-service``); on a system without RAUC (an
install without the image) there are no slots and :func:`slots_status` says so with an
:class:`UpdateUnavailableError`.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from appliance.errors import MirrorError

logger = logging.getLogger(__name__)

STATUS_TIMEOUT_S = 20


class UpdateUnavailableError(MirrorError):
    """No RAUC here, or it did not answer."""


@dataclass(frozen=True)
class SlotInfo:
    name: str  # RAUC's: rootfs.0, rootfs.1
    bootname: str  # A, B
    state: str  # booted, inactive
    boot_good: bool
    version: str  # "" until RAUC installed a bundle into it (the flashed slot)
    installed: str  # when (RAUC's timestamp), or ""


@dataclass(frozen=True)
class SlotsStatus:
    booted: str
    primary: str  # the slot the next (trial) boot takes
    slots: tuple[SlotInfo, ...]


def rauc_path() -> str:
    found = shutil.which("rauc")
    if found is None:
        raise UpdateUnavailableError("this system has no RAUC: A/B updates come with the image")
    return found


def _slot(name: str, data: dict[str, Any]) -> SlotInfo:
    status = data.get("slot_status") or {}
    bundle = status.get("bundle") or {}
    installed = status.get("installed") or {}
    return SlotInfo(
        name=name,
        bootname=str(data.get("bootname") or ""),
        state=str(data.get("state") or ""),
        boot_good=data.get("boot_status") == "good",
        version=str(bundle.get("version") or ""),
        installed=str(installed.get("timestamp") or ""),
    )


def parse_status(text: str) -> SlotsStatus:
    data = json.loads(text)
    slots: list[SlotInfo] = []
    for entry in data.get("slots", []):
        for name, slot in entry.items():
            if isinstance(slot, dict) and slot.get("class") == "rootfs":
                slots.append(_slot(name, slot))
    by_name = {slot.name: slot.bootname for slot in slots}
    primary = str(data.get("boot_primary") or "")
    return SlotsStatus(str(data.get("booted") or ""), by_name.get(primary, primary), tuple(slots))


def slots_status() -> SlotsStatus:
    cmd = [rauc_path(), "status", "--detailed", "--output-format=json"]
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=STATUS_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UpdateUnavailableError(f"rauc status did not answer: {exc}") from exc
    if done.returncode != 0:
        raise UpdateUnavailableError(f"rauc status: {done.stderr.strip()[-300:]}")
    try:
        return parse_status(done.stdout)
    except (ValueError, AttributeError) as exc:
        raise UpdateUnavailableError(f"rauc status gave no usable JSON: {exc}") from exc
