"""Open the camera the hardware profile's capture section describes.

``v4l2`` is a USB camera through OpenCV, ``picamera2`` a Raspberry Pi CSI
camera, ``gstreamer-csi`` a Jetson CSI camera. With ``mirror`` the frames are
flipped at capture (the display's ``mirror`` setting), so that text drawn
later reads right.
"""

from __future__ import annotations

import logging

from appliance.device.profile import CaptureSpec
from appliance.errors import ConfigError
from appliance.media.camera_source import CameraSource
from appliance.media.gstreamer_csi import GStreamerCsiSource
from appliance.media.mirrored_source import MirroredSource
from appliance.media.picamera2_source import Picamera2Source
from appliance.media.source_base import FrameSource

logger = logging.getLogger(__name__)


def _csi_number(spec: CaptureSpec) -> int:
    if isinstance(spec.device, int):
        return spec.device
    raise ConfigError(
        f"capture kind {spec.kind} needs device to be the camera number (0, 1), got {spec.device!r}"
    )


def is_camera(source: FrameSource) -> bool:
    """Whether ``source`` is a live camera, also behind the mirroring and waiting wrappers."""
    inner = getattr(source, "inner", None)
    if isinstance(inner, FrameSource):
        return is_camera(inner)
    return isinstance(source, CameraSource | Picamera2Source)


def open_camera(spec: CaptureSpec, *, mirror: bool = False) -> FrameSource:
    """A (not yet started) camera source for ``spec``; flipped when ``mirror``."""
    source: FrameSource
    if spec.kind == "picamera2":
        source = Picamera2Source(_csi_number(spec), size=spec.size, fps=spec.fps)
    elif spec.kind == "gstreamer-csi":
        source = GStreamerCsiSource(
            _csi_number(spec), size=spec.size, fps=spec.fps, flip_method=spec.flip_method
        )
    else:
        source = CameraSource(spec.device, size=spec.size, fps=spec.fps, fourcc=spec.fourcc)
    logger.debug("camera %r from the profile (mirror=%s)", source, mirror)
    return MirroredSource(source) if mirror else source
