"""The dashboard's figures (and ``/api/status``'s JSON), from the control in one place."""

from __future__ import annotations

import logging
from typing import Any

from appliance.control.api import MirrorControl
from appliance.control.live_apply import flatten
from appliance.pipeline.snapshot import TelemetrySnapshot
from web_ui.metrics import KNOWN_FIELDS

logger = logging.getLogger(__name__)

RECENT_TRANSITIONS = 8
# labels for telemetry fields the dashboard shows generically (others: their key, spelled out)
EXTRA_LABELS = {
    "thermal.state": "Thermal state",
    "thermal.temperature_c": "Temperature °C",
    "thermal.alert": "Thermal alert",
    "thermal.fan_duty": "Fan duty",
    "liveness.mode": "Liveness",
    "liveness.live": "Faces live",
    "liveness.unverified": "Faces not yet verified",
}


def extra_label(key: str) -> str:
    return EXTRA_LABELS.get(key) or key.replace("_", " ").replace(".", " · ").capitalize()


def health(snap: TelemetrySnapshot) -> str:
    """ "ok" while the pipeline runs and frames arrive, else "degraded"."""
    return "ok" if snap.running and snap.camera.connected else "degraded"


def camera_problem(snap: TelemetrySnapshot) -> str:
    """Why the camera delivers no frames (the reason of the last camera loss), or ""."""
    if snap.camera.connected:
        return ""
    lost = [
        t.reason for t in snap.transitions if t.subject == "camera" and t.to_state != "connected"
    ]
    return lost[-1] if lost else "no frames from the camera"


def health_reason(snap: TelemetrySnapshot) -> str:
    """Why ``health`` is "degraded" (the camera named when it is missing), or "" when ok."""
    if not snap.running:
        return "the pipeline is not running"
    problem = camera_problem(snap)
    return f"camera missing: {problem}" if problem else ""


def status(control: MirrorControl) -> dict[str, Any]:
    """JSON-ready: telemetry, hardware, identity and the derived totals the dashboard shows."""
    snap = control.snapshot()
    data = snap.as_dict()
    hardware = control.hardware()
    extras = {key: value for key, value in data.items() if key not in KNOWN_FIELDS}
    return {
        "health": health(snap),
        "telemetry": data | {"transitions": data["transitions"][-RECENT_TRANSITIONS:][::-1]},
        "dropped": snap.dropped,
        "errors": snap.error_count(),
        "hardware": {
            "profile": hardware.profile,
            "backend": hardware.backend,
            "notes": list(hardware.notes),
        },
        "identity": control.active_identity(),
        "swapping": control.swapping_enabled,
        "extras": flatten(extras),
        "warnings": warnings(snap),
    }


def warnings(snap: TelemetrySnapshot) -> list[str]:
    """What staff must know: safety switched off, the device too hot, sensors failing."""
    out = []
    if snap.liveness.mode == "off":
        out.append(
            "Liveness is off: faces are swapped without a blink or head turn, "
            "so a photo held up to the camera is swapped too."
        )
    thermal = snap.thermal.state.lower()
    if thermal in ("hot", "critical"):
        out.append(f"The device is {thermal}: quality is lowered to cool it down.")
    if snap.thermal.alert:
        out.append(f"Thermal sensors: {snap.thermal.alert}")
    problem = camera_problem(snap)
    if problem:
        out.append(
            f"Camera missing: {problem}. The mirror shows the camera screen and picks the "
            "camera up by itself once it delivers frames."
        )
    return out
