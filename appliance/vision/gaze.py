"""Gaze follows the visitor: the identity's irises go where the visitor's are.

The identity's iris points (the 478-point mesh's 468-477) are part of its swap
mesh wherever the photo shows them inside the eye opening, so moving them in
the target mesh moves the identity's own iris texture (its colour and shape)
inside its eye. ``follow_gaze`` places them in the target as the visitor's
sit in the visitor's eye: the same position relative to the eye corners.
"""

from __future__ import annotations

import logging

import cv2
import numpy as np

from appliance.vision.mesh import LEFT_EYE, RIGHT_EYE
from appliance.vision.triangulation import IntArray
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

# per eye: the eye opening, its outer and inner corner, the iris centre and ring
EYES = (
    (RIGHT_EYE, 33, 133, (468, 469, 470, 471, 472)),
    (LEFT_EYE, 263, 362, (473, 474, 475, 476, 477)),
)
INSIDE_PX = 0.5  # an iris point this far inside the eye opening joins the swap mesh


def iris_points(points: FloatArray) -> IntArray:
    """The iris points the photo shows inside the eye openings (none without irises)."""
    if len(points) < 478:
        return np.zeros(0, np.int32)
    chosen: list[int] = []
    for ring, _, _, iris in EYES:
        contour = points[list(ring), :2].astype(np.float32).reshape(-1, 1, 2)
        for index in iris:
            x, y = (float(v) for v in points[index, :2])
            if cv2.pointPolygonTest(contour, (x, y), True) >= INSIDE_PX:
                chosen.append(index)
    return np.asarray(chosen, np.int32)


def _corner_map(src: FloatArray, dst: FloatArray) -> tuple[complex, complex]:
    """The 2-D similarity z -> a z + b taking the two points ``src`` onto ``dst``."""
    s0, s1 = complex(*src[0]), complex(*src[1])
    d0, d1 = complex(*dst[0]), complex(*dst[1])
    a = (d1 - d0) / (s1 - s0) if s1 != s0 else 1.0 + 0j
    return a, d0 - a * s0


def follow_gaze(target: FloatArray, visitor: FloatArray) -> FloatArray:
    """``target`` with its iris points where the visitor's sit in their eyes."""
    if len(target) < 478 or len(visitor) < 478:
        return target
    out = target.copy()
    for _, outer, inner, iris in EYES:
        a, b = _corner_map(visitor[[outer, inner], :2], target[[outer, inner], :2])
        index = list(iris)
        z = visitor[index, 0] + 1j * visitor[index, 1]
        moved = a * z + b
        out[index, 0] = moved.real
        out[index, 1] = moved.imag
    return out
