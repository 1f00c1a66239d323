"""Detail matches the frame: the swapped face as sharp as the face it replaces.

The warped identity is usually softer than the live frame (a small photo
scaled up, two resamplings). Its fine detail (variance of the Laplacian inside
the face) is measured against the visitor's own. An unsharp mask brings out
what the identity's texture has (capped: noise is not detail); what is still
missing is the frame's own fine grain: the visitor's high-frequency layer
(the frame minus its blur), clipped to a small amplitude so skin texture,
sensor noise and compression grain pass but the strong edges of the
visitor's features (their identity) do not, added at the gain that makes up
the difference. A face with more fine detail than the frame's (a grainy photo on a
soft clip) is softened instead. Both gains are eased per face across frames
(no flicker).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import cv2
import numpy as np
import numpy.typing as npt

logger = logging.getLogger(__name__)

Image = npt.NDArray[np.uint8]
Eases = tuple[Callable[[float], float], Callable[[float], float]]
MAX_GAIN = 4.0  # the most unsharp-mask gain ever applied
MIN_GAIN = -0.6  # a face with more fine detail than the frame's is softened, at most this far
SIGMA_PX = 0.8  # unsharp-mask blur: the finest detail a frame carries
GRAIN_SIGMA_PX = 1.0  # the visitor's fine layer: the frame minus this blur
GRAIN_CLIP = 8.0  # grey levels: the grain passes, the features' edges do not
MAX_GRAIN = 0.5  # the most of the visitor's grain ever added (its noise changes every frame)
# the share of the frame's fine detail (Laplacian energy) the swapped face is given:
# all of it would read as more flicker than the original (the sharpened texture
# moves with the landmarks' jitter, the grain changes every frame)
DETAIL_TARGET = 0.75
_MIN_PIXELS = 64
_CORE_PX = 9  # the edges of the mask and its holes are left out of the comparison


def detail_energy(image: Image | npt.NDArray[np.float32], mask: Image) -> float | None:
    """Variance of the Laplacian of the grey image where ``mask`` is set."""
    if cv2.countNonZero(mask) < _MIN_PIXELS:
        return None
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image
    # 8-bit grey fits 16-bit Laplacians exactly (half the time of float ones)
    depth = cv2.CV_16S if grey.dtype == np.uint8 else cv2.CV_32F
    lap = cv2.Laplacian(grey, depth, ksize=1)
    _, std = cv2.meanStdDev(lap, mask=mask)
    return float(std[0, 0]) ** 2


def _core(mask: Image) -> Image:
    """The mask without its edges and the edges of its holes."""
    core = cv2.erode(mask, np.ones((_CORE_PX, _CORE_PX), np.uint8))
    return np.asarray(cv2.threshold(core, 127, 255, cv2.THRESH_BINARY)[1], np.uint8)


def match_detail(warped: Image, seen: Image, mask: Image, ease: Eases | None = None) -> Image:
    """``warped`` brought up to the fine detail of the frame as seen (a new image or itself).

    First an unsharp mask (gain k scales fine detail by about (1 + k), its
    Laplacian energy by (1 + k) squared; capped), then what is still missing
    from the visitor's own grain (independent of the identity's detail, so the
    energies add). ``ease``: the sharpening and the grain gain, each eased
    across frames (appliance.vision.blend.ColourMemory).
    """
    core = _core(mask)
    have = detail_energy(warped, core)
    seen_grey: Image = np.asarray(cv2.cvtColor(seen, cv2.COLOR_BGR2GRAY), np.uint8)
    seen_energy = detail_energy(seen_grey, core)
    if have is None or seen_energy is None or have <= 1e-6:
        return warped
    want = DETAIL_TARGET * seen_energy
    gain = float(np.clip(np.sqrt(want / have) - 1.0, MIN_GAIN, MAX_GAIN))
    if ease is not None:
        gain = ease[0](gain)
    sharp = sharpen(warped, gain)
    layer = grain(seen_grey)
    now = detail_energy(sharp, core)
    extra = detail_energy(layer, core)
    if now is None or extra is None or extra <= 1e-6:
        return sharp
    amount = float(np.clip(np.sqrt(max(0.0, want - now) / extra), 0.0, MAX_GRAIN))
    if ease is not None:
        amount = ease[1](amount)
    return add_grain(sharp, layer, amount)


def sharpen(image: Image, gain: float) -> Image:
    """Unsharp mask: ``image + gain * (image - blur(image))`` (a new image); a negative
    gain softens. The blur is 3x3 (its 7-tap kernel cost 0.2 ms more per face)."""
    if abs(gain) <= 0.01:
        return image
    blurred = cv2.GaussianBlur(image, (3, 3), SIGMA_PX)
    out: Image = np.asarray(cv2.addWeighted(image, 1.0 + gain, blurred, -gain, 0), np.uint8)
    return out


def grain(visitor: Image) -> npt.NDArray[np.float32]:
    """The visitor's fine layer: the frame (colour or grey) minus its blur, clipped to a
    small amplitude."""
    grey = (cv2.cvtColor(visitor, cv2.COLOR_BGR2GRAY) if visitor.ndim == 3 else visitor).astype(
        np.float32
    )
    fine = grey - cv2.GaussianBlur(grey, (0, 0), GRAIN_SIGMA_PX)
    out: npt.NDArray[np.float32] = np.clip(fine, -GRAIN_CLIP, GRAIN_CLIP)
    return out


def add_grain(image: Image, layer: npt.NDArray[np.float32], gain: float) -> Image:
    """``image`` plus ``gain`` times the grey ``layer`` on every channel (a new image)."""
    if gain <= 0.01:
        return image
    out: Image = np.asarray(
        cv2.add(image, cv2.merge([layer * gain] * 3), dtype=cv2.CV_8U), np.uint8
    )
    return out
