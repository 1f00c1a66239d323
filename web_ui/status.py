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
    """ "ok" while the pipeline runs, frames arrive and the screen (if any) shows them,
    else "degraded"."""
    ok = snap.running and snap.camera.connected and not screen_problem(snap)
    return "ok" if ok else "degraded"


def camera_problem(snap: TelemetrySnapshot) -> str:
    """Why the camera delivers no frames (the reason of the last camera loss), or ""."""
    if snap.camera.connected:
        return ""
    lost = [
        t.reason for t in snap.transitions if t.subject == "camera" and t.to_state != "connected"
    ]
    return lost[-1] if lost else "no frames from the camera"


def screen_problem(snap: TelemetrySnapshot) -> str:
    """Why the HDMI screen shows nothing (missing, busy, failed), or "" (also without one)."""
    return snap.parts.get("screen", "")


def safe_mode_problem(snap: TelemetrySnapshot) -> str:
    """Why the mirror runs on the default settings (safe mode: its settings file could not
    be used), or ""."""
    return snap.parts.get("config", "")


def accelerator_problem(snap: TelemetrySnapshot) -> str:
    """Why the profile's accelerator is not in use (the CPU runs instead), or ""."""
    return snap.parts.get("accelerator", "")


def screen_state(snap: TelemetrySnapshot) -> str:
    """The dashboard's word for the screen: shown, missing or none (not configured)."""
    if "screen" not in snap.parts:
        return "none"
    return "missing" if screen_problem(snap) else "shown"


def accelerator_state(snap: TelemetrySnapshot) -> str:
    """The dashboard's word for the accelerator: in use, CPU only, or none (not asked for)."""
    if "accelerator" not in snap.parts:
        return "none"
    return "CPU only" if accelerator_problem(snap) else "in use"


def health_reason(snap: TelemetrySnapshot) -> str:
    """Why ``health`` is "degraded" (the camera and the screen named when missing), or ""
    when ok."""
    if not snap.running:
        return "the pipeline is not running"
    camera, screen = camera_problem(snap), screen_problem(snap)
    reasons = [f"camera missing: {camera}"] if camera else []
    reasons += [f"screen missing: {screen}"] if screen else []
    return "; ".join(reasons)


def health_notes(snap: TelemetrySnapshot) -> list[str]:
    """What runs degraded without making the mirror unhealthy: the CPU instead of the
    accelerator, the default settings in safe mode."""
    problem, safe_mode = accelerator_problem(snap), safe_mode_problem(snap)
    notes = [f"accelerator: {problem}"] if problem else []
    return notes + ([f"safe mode: {safe_mode}"] if safe_mode else [])


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
        "screen": screen_state(snap),
        "accelerator": accelerator_state(snap),
        "degraded": health_notes(snap),
    }


def warnings(snap: TelemetrySnapshot) -> list[str]:
    """What staff must know: safety switched off, the device too hot, sensors failing."""
    out = []
    safe_mode = safe_mode_problem(snap)
    if safe_mode:
        out.append(
            f"Safe mode: {safe_mode}. Check the settings and save them to leave safe mode; "
            "the bad file stays in the data folder."
        )
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
    screen = screen_problem(snap)
    if screen:
        out.append(
            f"Screen missing: {screen}. The mirror runs on (preview, admin page, recording) "
            "and tries the screen again every few seconds: plug it in, or stop what holds it."
        )
    accelerator = accelerator_problem(snap)
    if accelerator:
        out.append(
            f"Accelerator not in use: {accelerator}. The mirror runs on the CPU, slower; "
            "see Hardware below and `mirror doctor`."
        )
    return out
