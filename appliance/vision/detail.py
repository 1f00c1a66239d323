"""Detail matches the frame: the swapped face as sharp as the face it replaces.

The warped identity is usually softer than the live frame (a small photo
scaled up, two resamplings). Its fine detail (variance of the Laplacian inside
the face) is measured against the visitor's own, and an unsharp mask adds what
is missing, with a gain eased per face across frames (no flicker) and capped
(noise is not detail).
"""

from __future__ import annotations

import logging

import cv2
import numpy as np
import numpy.typing as npt

logger = logging.getLogger(__name__)

Image = npt.NDArray[np.uint8]
MAX_GAIN = 4.0  # the most unsharp-mask gain ever applied
SIGMA_PX = 0.8  # unsharp-mask blur: the finest detail a frame carries
_MIN_PIXELS = 64
_CORE_PX = 9  # the edges of the mask and its holes are left out of the comparison


def detail_energy(image: Image, mask: Image) -> float | None:
    """Variance of the Laplacian of the grey image where ``mask`` is set."""
    inside = mask > 127
    if int(inside.sum()) < _MIN_PIXELS:
        return None
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image
    lap = cv2.Laplacian(grey, cv2.CV_32F, ksize=1)
    return float(lap[inside].var())


def sharpen_gain(warped: Image, visitor: Image, mask: Image) -> float | None:
    """The unsharp-mask gain that brings ``warped``'s detail up to ``visitor``'s (0 = none).

    An unsharp mask with gain k scales fine detail by about (1 + k), its
    Laplacian energy by (1 + k) squared.
    """
    core = np.asarray(
        cv2.erode(mask, np.ones((_CORE_PX, _CORE_PX), np.uint8)), np.uint8
    )  # no mask or hole edges
    have = detail_energy(warped, core)
    want = detail_energy(visitor, core)
    if have is None or want is None or have <= 1e-6:
        return None
    return float(np.clip(np.sqrt(want / have) - 1.0, 0.0, MAX_GAIN))


def sharpen(image: Image, gain: float) -> Image:
    """Unsharp mask: ``image + gain * (image - blur(image))`` (a new image)."""
    if gain <= 0.01:
        return image
    blurred = cv2.GaussianBlur(image, (0, 0), SIGMA_PX)
    out: Image = np.asarray(cv2.addWeighted(image, 1.0 + gain, blurred, -gain, 0), np.uint8)
    return out
