"""Light follows the visitor: the identity's own shading out, the visitor's in.

Per face, on a small copy: the low-frequency luminance of the warped identity
and of the visitor's face (each blurred inside the face mask only, so the
background and hair do not leak in); the warped face is multiplied by their
ratio. A side-lit photo's dark cheek disappears and the visitor's own light
(a lamp on one side, light from above) falls on the swapped face; the blur is
wide enough that little of the visitor's own relief (cheeks, smile folds) comes too.
The gain field is eased per face across frames (no flicker of the light).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.thumbnail import thumbnail

logger = logging.getLogger(__name__)

Image = npt.NDArray[np.uint8]
Ease = Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]]
# blur, as a share of the face height: the light, not the face under it. At 0.1 the
# gain field gave the identity a sixth of the visitor's own mid-scale relief (cheeks,
# smile folds: what a recogniser reads), at 0.15 a tenth; d_src fell in 15 of 16 clip
# and identity pairs (half_body x man_mouth_open 0.765 -> 0.733; the four shared
# clips x four identities, 60 frames) and the shading figure (taken at 0.1) rose by
# at most 0.02. Wider still takes less of a photo's own hard light step out: a half
# 15% darker read a fill step of 3.0 on a frontal render at 0.1, 3.6 here, 3.8 at 0.2
SIGMA = 0.15
GAIN_RANGE = (0.5, 2.0)
# the luminances are blurred at about this many pixels across (48 with the 0.1 blur:
# a wider blur on a 48 px copy cost up to 0.15 ms more a face, on 32 px no more than
# before; d_src within 0.003 of the 48 px copy's, measured at a blur of 0.2)
SMALL_SIDE = 32
_Y = np.array([0.114, 0.587, 0.299], np.float32)  # BGR luminance weights


def _low(
    image: Image, weight: npt.NDArray[np.float32], size: tuple[int, int], sigma: float
) -> npt.NDArray[np.float32]:
    small = thumbnail(image, size).astype(np.float32)
    luma = small @ _Y
    blurred = cv2.GaussianBlur(luma * weight, (0, 0), sigma)
    return np.asarray(blurred, np.float32)


def shading_gain(
    warped: Image,
    visitor: Image,
    mask: Image,
    face_px: float,
    ease: Ease | None = None,
) -> npt.NDArray[np.float32] | None:
    """The per-pixel gain (the size of ``mask``) that gives ``warped`` the visitor's
    shading. ``warped`` and ``visitor`` may be thumbnails of any size down to
    ``SMALL_SIDE``: only their low frequencies are used.
    """
    h, w = mask.shape
    factor = max(1.0, max(h, w) / SMALL_SIDE)
    size = (max(4, round(w / factor)), max(4, round(h / factor)))
    sigma = max(1.0, SIGMA * face_px / factor)
    inside = (thumbnail(mask, size) > 127).astype(np.float32)
    if inside.sum() < 16:
        return None
    norm = np.asarray(cv2.GaussianBlur(inside, (0, 0), sigma), np.float32) + 1e-3
    target = _low(visitor, inside, size, sigma) / norm
    source = _low(warped, inside, size, sigma) / norm
    gain = np.clip(target / np.maximum(source, 1.0), *GAIN_RANGE).astype(np.float32)
    gain = np.where(norm > 0.05, gain, 1.0).astype(np.float32)
    if ease is not None:
        gain = ease(gain)
    full = cv2.resize(gain, (w, h), interpolation=cv2.INTER_LINEAR)
    return np.asarray(full, np.float32)


def relight(
    warped: Image,
    visitor: Image,
    mask: Image,
    face_px: float,
    ease: Ease | None = None,
    *,
    warped_small: Image | None = None,
) -> Image:
    """``warped`` lit like the visitor's face under ``mask`` (a new image).

    ``ease``: takes this frame's small gain field, gives the one to use (eased
    across frames, appliance.vision.blend.ColourMemory.ease_shading).
    ``visitor`` may be a thumbnail, and ``warped_small`` a thumbnail standing for
    ``warped`` (see ``shading_gain``).
    """
    small = warped if warped_small is None else warped_small
    gain = shading_gain(small, visitor, mask, face_px, ease)
    if gain is None:
        return warped
    out: Image = np.asarray(
        cv2.multiply(warped, cv2.merge([gain, gain, gain]), dtype=cv2.CV_8U), np.uint8
    )
    return out
