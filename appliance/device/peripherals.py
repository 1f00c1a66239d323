"""Camera, display and GPIO as the device shows them, read under the root directory.

Nothing is opened or claimed: the running mirror may hold the camera and the
pins, and the doctor must not disturb it. A camera is a V4L2 node, a display
a DRM connector whose ``status`` reads ``connected``, GPIO a ``/dev/gpiochip*``.
"""

from __future__ import annotations

import contextlib
import logging
import re
from pathlib import Path

from appliance.device.profile import CaptureSpec, DisplaySpec, GpioSpec
from appliance.device.report import CameraReport, DisplayReport, GpioReport

logger = logging.getLogger(__name__)

_CONNECTOR_TYPES = {"hdmi": ("HDMI",), "dp": ("DP",), "dsi": ("DSI",)}
_VIDEO_NODE = re.compile(r"^video(\d+)$")


def under(root: Path, device_path: str) -> Path:
    """``device_path`` (absolute, as on the device) inside ``root``."""
    return root / device_path.lstrip("/")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _video_node(root: Path, device_path: str) -> str | None:
    """``videoN`` for ``/dev/videoN`` or a link to it under the root."""
    path = under(root, device_path)
    candidates = [path.name]
    with contextlib.suppress(OSError):
        candidates.append(path.resolve().name)
    return next((name for name in candidates if _VIDEO_NODE.match(name)), None)


def check_camera(root: Path, spec: CaptureSpec) -> CameraReport:
    device = f"/dev/video{spec.device}" if isinstance(spec.device, int) else spec.device
    found = under(root, device).exists()
    node = _video_node(root, device) if found else None
    name = _read(root / "sys/class/video4linux" / node / "name") if node else None
    return CameraReport(
        device=device,
        found=found,
        name=name,
        resolution=spec.resolution,
        fps=spec.fps,
        fourcc=spec.fourcc,
        required=spec.required,
    )


def connected_connectors(root: Path) -> list[str]:
    """DRM connectors (``card0-HDMI-A-1``) whose status is ``connected``."""
    connected = []
    for status in sorted((root / "sys/class/drm").glob("card*-*/status")):
        if _read(status) == "connected":
            connected.append(status.parent.name)
    return connected


def _connector_type(name: str) -> str:
    """``card0-HDMI-A-1`` -> ``HDMI``; ``card1-DP-2`` -> ``DP``."""
    parts = name.split("-")
    return parts[1] if len(parts) > 1 else name


def check_display(root: Path, spec: DisplaySpec) -> DisplayReport:
    connected = connected_connectors(root)
    if spec.connector == "headless":
        ok = True
    elif spec.connector == "any":
        ok = bool(connected)
    else:
        types = _CONNECTOR_TYPES[spec.connector]
        ok = any(_connector_type(name) in types for name in connected)
    return DisplayReport(
        connector=spec.connector, resolution=spec.resolution, connected=connected, ok=ok
    )


def check_gpio(root: Path, spec: GpioSpec | None) -> GpioReport:
    chips = [f"/dev/{chip.name}" for chip in sorted((root / "dev").glob("gpiochip*"))]
    pins = dict(spec.pins) if spec else {}
    return GpioReport(
        numbering=spec.numbering if spec else None,
        pins=pins,
        chips=chips,
        ok=bool(chips) or not pins,
    )
