"""Paste a swapped crop back through the inverse affine, with an eroded, blurred mask.

Only the region the crop maps back onto is touched. The mask is the crop's
footprint intersected with the visitor's face oval (so neither the crop's
corners nor its black outside-the-frame border ever show), less whatever
covers the face when asked, then eroded and blurred (``feather``: the soft
edge stays inside the oval).
"""

from __future__ import annotations

import logging

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.blend import alpha_blend, feather
from appliance.vision.mesh import FACE_OVAL
from appliance.vision.neural.align import apply
from appliance.vision.occlusion import occluders
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

Image = npt.NDArray[np.uint8]

_OVAL = np.array(FACE_OVAL)
_SHIFT = 4  # sub-pixel bits for the oval polygon
_INSET_PX = 2  # the crop's outermost pixels are interpolated against black: left out


def paste_back(
    frame: Image,
    swapped: Image,
    matrix: FloatArray,
    face_xy: FloatArray,
    *,
    feather_fraction: float,
    strength: float = 1.0,
    keep_occluders: bool = False,
) -> bool:
    """Blend ``swapped`` (the crop cut with ``matrix``) into ``frame`` in place.

    ``face_xy``: the visitor's landmarks (N, 2) in frame pixels. False when
    nothing was changed (the face is off the frame).
    """
    size = swapped.shape[0]
    inverse = cv2.invertAffineTransform(matrix).astype(np.float32)
    box = _box(inverse, size, frame.shape)
    if box is None:
        return False
    x0, y0, x1, y1 = box
    inverse[:, 2] -= (x0, y0)
    roi = frame[y0:y1, x0:x1]
    out_size = (x1 - x0, y1 - y0)
    warped = cv2.warpAffine(
        swapped, inverse, out_size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
    )
    mask = _mask(inverse, size, face_xy - np.array((x0, y0), np.float32), out_size)
    if keep_occluders:
        mask[occluders(roi, face_xy - np.array((x0, y0), np.float32)) > 0] = 0
    face_px = float(np.ptp(face_xy[_OVAL, 1]))
    alpha = feather(mask, int(face_px * feather_fraction))
    if strength < 1.0:
        alpha = (alpha.astype(np.float32) * max(0.0, strength)).astype(np.uint8)
    alpha_blend(roi, np.asarray(warped, np.uint8), alpha)
    return bool(alpha.any())


def _box(
    inverse: FloatArray, size: int, shape: tuple[int, ...]
) -> tuple[int, int, int, int] | None:
    corners = np.array([[0, 0], [size, 0], [size, size], [0, size]], np.float32)
    xy = apply(inverse, corners)
    h, w = shape[:2]
    x0, y0 = max(0, int(np.floor(xy[:, 0].min()))), max(0, int(np.floor(xy[:, 1].min())))
    x1, y1 = min(w, int(np.ceil(xy[:, 0].max())) + 1), min(h, int(np.ceil(xy[:, 1].max())) + 1)
    if x1 - x0 < 2 or y1 - y0 < 2:
        return None
    return x0, y0, x1, y1


def _mask(
    inverse: FloatArray, size: int, face_xy: FloatArray, out_size: tuple[int, int]
) -> npt.NDArray[np.uint8]:
    footprint = np.zeros((size, size), np.uint8)
    footprint[_INSET_PX : size - _INSET_PX, _INSET_PX : size - _INSET_PX] = 255
    covered = cv2.warpAffine(footprint, inverse, out_size, flags=cv2.INTER_NEAREST, borderValue=0)
    oval = np.zeros((out_size[1], out_size[0]), np.uint8)
    points = np.round(face_xy[_OVAL] * (1 << _SHIFT)).astype(np.int32)
    cv2.fillPoly(oval, [points], 255, cv2.LINE_8, _SHIFT)
    mask: npt.NDArray[np.uint8] = np.minimum(np.asarray(covered, np.uint8), oval)
    return mask
