"""Open a frame source from a spec string: ``demo``, a camera or a video file."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import cv2
import numpy as np

from appliance.errors import InputError
from appliance.media.camera_source import CameraSource
from appliance.media.demo_source import DemoSource
from appliance.media.source_base import FrameSource, FrameTimeoutError
from appliance.media.video_source import VideoFileSource

logger = logging.getLogger(__name__)

__all__ = [
    "CameraSource",
    "DemoSource",
    "FrameSource",
    "FrameTimeoutError",
    "VideoFileSource",
    "open_source",
]

DEMO_IMAGE = "astronaut"  # model-store asset shown by the demo source by default
_CAMERA_SPEC = re.compile(r"^(\d+|/dev/video\d+)$")


def _default_demo_image() -> np.ndarray:
    from appliance.modelstore import ModelStore

    path = ModelStore().path(DEMO_IMAGE)
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise InputError(f"demo image {path} cannot be read")
    return image


def open_source(
    spec: str,
    *,
    demo_image: np.ndarray | None = None,
    size: tuple[int, int] = (640, 480),
    fps: float = 30.0,
    paced: bool = True,
    frames: int | None = None,
) -> FrameSource:
    """A (not yet started) source for ``spec``.

    ``"demo"`` is a ``DemoSource`` of ``demo_image`` (default: the astronaut
    photo of the model store); ``"0"`` or ``"/dev/video0"`` a ``CameraSource``
    asking for ``size`` and ``fps``; anything else a ``VideoFileSource``
    (``size``, ``fps`` and ``frames`` apply to the demo and camera only).
    """
    text = spec.strip()
    if text.lower() == "demo":
        image = _default_demo_image() if demo_image is None else demo_image
        return DemoSource(image, size=size, fps=fps, paced=paced, frames=frames)
    if _CAMERA_SPEC.match(text):
        return CameraSource(text, size=size, fps=fps)
    return VideoFileSource(Path(text).expanduser(), paced=paced)
