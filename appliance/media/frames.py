"""The frame that flows through the pipeline, with its capture time and stage timings."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

Image = npt.NDArray[np.uint8]


@dataclass
class Frame:
    """One captured frame. ``image`` is HxWx3 uint8 BGR.

    ``idle``: the pipeline found nobody there (its idle mode, or the PIR sensor's
    no-motion cap); the display then shows its idle screen unless the frame has faces.

    ``encoded``: the camera's JPEG the image was decoded from (an MJPG camera's
    frame, kept by reference, never copied), or None. A frame whose swap fails
    is decoded again from it (``ProcessWorker``) instead of every frame being
    copied before its swap.
    """

    image: Image
    index: int
    capture_ns: int
    timings_ms: dict[str, float] = field(default_factory=dict)
    faces: int = 0
    swapped: bool = False
    idle: bool = False
    encoded: bytes | Image | None = None
