"""Detail matches the frame: the swapped face as sharp as the face it replaces.

The warped identity is usually softer than the live frame (a small photo
scaled up, two resamplings). Its fine detail (variance of the Laplacian inside
the face) is measured against the visitor's own. An unsharp mask brings out
what the identity's texture has (capped: noise is not detail); what is still
missing is the frame's own fine grain: the visitor's high-frequency layer
(the frame minus its blur), clipped to a small amplitude so skin texture,
sensor noise and compression grain pass but the strong edges of the
visitor's features (their identity) do not, added at the gain that makes up
the difference. Both gains are eased per face across frames (no flicker).
"""

from __future__ import annotations

import logging

import cv2
import numpy as np
import numpy.typing as npt

logger = logging.getLogger(__name__)

Image = npt.NDArray[np.uint8]
MAX_GAIN = 2.0  # the most unsharp-mask gain ever applied
SIGMA_PX = 0.8  # unsharp-mask blur: the finest detail a frame carries
GRAIN_SIGMA_PX = 1.0  # the visitor's fine layer: the frame minus this blur
GRAIN_CLIP = 8.0  # grey levels: the grain passes, the features' edges do not
MAX_GRAIN = 1.0  # the most of the visitor's grain ever added
_MIN_PIXELS = 64
_CORE_PX = 9  # the edges of the mask and its holes are left out of the comparison


def detail_energy(image: Image | npt.NDArray[np.float32], mask: Image) -> float | None:
    """Variance of the Laplacian of the grey image where ``mask`` is set."""
    inside = mask > 127
    if int(inside.sum()) < _MIN_PIXELS:
        return None
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image
    lap = cv2.Laplacian(grey, cv2.CV_32F, ksize=1)
    return float(lap[inside].var())


def _core(mask: Image) -> Image:
    """The mask without its edges and the edges of its holes."""
    return np.asarray(cv2.erode(mask, np.ones((_CORE_PX, _CORE_PX), np.uint8)), np.uint8)


def sharpen_gain(warped: Image, visitor: Image, mask: Image) -> float | None:
    """The unsharp-mask gain that brings ``warped``'s detail up to ``visitor``'s (0 = none).

    An unsharp mask with gain k scales fine detail by about (1 + k), its
    Laplacian energy by (1 + k) squared.
    """
    core = _core(mask)
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


def grain(visitor: Image) -> npt.NDArray[np.float32]:
    """The visitor's fine layer: the frame minus its blur, clipped to a small amplitude."""
    grey = cv2.cvtColor(visitor, cv2.COLOR_BGR2GRAY).astype(np.float32)
    fine = grey - cv2.GaussianBlur(grey, (0, 0), GRAIN_SIGMA_PX)
    out: npt.NDArray[np.float32] = np.clip(fine, -GRAIN_CLIP, GRAIN_CLIP)
    return out


def grain_gain(
    sharpened: Image, visitor: Image, layer: npt.NDArray[np.float32], mask: Image
) -> float | None:
    """How much of ``layer`` makes ``sharpened``'s detail up to the visitor's (0 to MAX_GRAIN).

    The two are independent, so their Laplacian energies add.
    """
    core = _core(mask)
    have = detail_energy(sharpened, core)
    want = detail_energy(visitor, core)
    extra = detail_energy(layer, core)
    if have is None or want is None or extra is None or extra <= 1e-6:
        return None
    return float(np.clip(np.sqrt(max(0.0, want - have) / extra), 0.0, MAX_GRAIN))


def add_grain(image: Image, layer: npt.NDArray[np.float32], gain: float) -> Image:
    """``image`` plus ``gain`` times the grey ``layer`` on every channel (a new image)."""
    if gain <= 0.01:
        return image
    out: Image = np.asarray(
        cv2.add(image, cv2.merge([layer * gain] * 3), dtype=cv2.CV_8U), np.uint8
    )
    return out
