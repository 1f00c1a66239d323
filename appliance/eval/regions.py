"""The visitor's face region, from our own 478 landmarks (the face oval).

The stability and seam figures are measured in and around this region. It is
built from the landmarks alone, not from any swapper's own mask, so the figures
mean the same thing whichever swapper made the frame.
"""

from __future__ import annotations

import logging

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.mesh import FACE_OVAL

logger = logging.getLogger(__name__)

Mask = npt.NDArray[np.uint8]
Image = npt.NDArray[np.uint8]
BAND_FRACTION = 0.02  # seam band half-width, as a share of the face height
MIN_BAND_PX = 2

_OVAL = np.array(FACE_OVAL)


def face_polygon(points: npt.NDArray[np.floating]) -> npt.NDArray[np.int32]:
    """The face oval as an (N, 2) int32 polygon in image pixels."""
    return np.round(points[_OVAL, :2]).astype(np.int32)


def face_mask(shape: tuple[int, ...], points: npt.NDArray[np.floating]) -> Mask:
    """255 inside the face oval, 0 elsewhere, for an image of ``shape``."""
    mask = np.zeros(shape[:2], np.uint8)
    cv2.fillPoly(mask, [face_polygon(points)], 255, cv2.LINE_8)
    return mask


def band_px(points: npt.NDArray[np.floating]) -> int:
    """The seam band half-width for this face: a small share of its height."""
    oval_y = points[_OVAL, 1]
    return max(MIN_BAND_PX, round(float(np.ptp(oval_y)) * BAND_FRACTION))


def crop_box(
    points: npt.NDArray[np.floating], margin_px: int, shape: tuple[int, ...]
) -> tuple[int, int, int, int]:
    """x0, y0, x1, y1 of the face oval's box grown by ``margin_px``, inside the image."""
    oval = points[_OVAL, :2]
    height, width = shape[:2]
    x0 = max(0, int(np.floor(oval[:, 0].min())) - margin_px)
    y0 = max(0, int(np.floor(oval[:, 1].min())) - margin_px)
    x1 = min(width, int(np.ceil(oval[:, 0].max())) + margin_px + 1)
    y1 = min(height, int(np.ceil(oval[:, 1].max())) + margin_px + 1)
    return x0, y0, x1, y1


def face_crops(
    original: Image,
    swapped: Image,
    points: npt.NDArray[np.floating],
    exclude: tuple[int, int, int, int] | None = None,
) -> tuple[Image, Image, Mask, float]:
    """The face's box cut from both images, the face mask in it (``exclude``, a box in
    image pixels such as the AI label's, left out) and the box's height: what the
    shading and detail figures compare."""
    mask = face_mask(original.shape, points)
    if exclude is not None:
        ex0, ey0, ex1, ey1 = exclude
        mask[ey0:ey1, ex0:ex1] = 0
    x0, y0, x1, y1 = crop_box(points, 0, original.shape)
    return (
        original[y0:y1, x0:x1],
        swapped[y0:y1, x0:x1],
        mask[y0:y1, x0:x1],
        float(y1 - y0),
    )
