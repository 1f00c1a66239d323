"""Open the camera the hardware profile's capture section describes.

``v4l2`` is a USB camera through OpenCV, ``picamera2`` a Raspberry Pi CSI
camera, ``gstreamer-csi`` a Jetson CSI camera. Mirroring, waiting for a
missing camera and the live-camera mode are the source factory's
(``appliance.media.mirror_source``).
"""

from __future__ import annotations

import logging

from appliance.device.profile import CaptureSpec
from appliance.errors import ConfigError
from appliance.media.camera_source import CameraSource
from appliance.media.gstreamer_csi import GStreamerCsiSource
from appliance.media.picamera2_source import Picamera2Source
from appliance.media.source_base import FrameSource

logger = logging.getLogger(__name__)


def _csi_number(spec: CaptureSpec) -> int:
    if isinstance(spec.device, int):
        return spec.device
    raise ConfigError(
        f"capture kind {spec.kind} needs device to be the camera number (0, 1), got {spec.device!r}"
    )


def open_camera(spec: CaptureSpec) -> FrameSource:
    """A (not yet started) camera source for ``spec``."""
    source: FrameSource
    if spec.kind == "picamera2":
        source = Picamera2Source(_csi_number(spec), size=spec.size, fps=spec.fps)
    elif spec.kind == "gstreamer-csi":
        source = GStreamerCsiSource(
            _csi_number(spec), size=spec.size, fps=spec.fps, flip_method=spec.flip_method
        )
    else:
        source = CameraSource(spec.device, size=spec.size, fps=spec.fps, fourcc=spec.fourcc)
    logger.debug("camera %r from the profile", source)
    return source
