"""An identity's mesh with a closed mouth: the base shape for shape transfer.

Shape transfer adds the visitor's expression to the identity's mesh, so an
identity photographed mid-laugh would give every visitor an open mouth. The
lower lip (and the lip line under it) is moved up to meet the upper lip,
column by column across the mouth; nothing else moves. The texture keeps its
own points: only the target shape changes.
"""

from __future__ import annotations

import logging

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.mesh import CHIN, FOREHEAD
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

# Inner lip line, upper and lower, in matching columns from one corner to the other.
UPPER_INNER = (78, 191, 80, 81, 82, 13, 312, 311, 310, 415, 308)
LOWER_INNER = (78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308)
LOWER_OUTER = (61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291)
CLOSED_GAP = 0.015  # lip gap under this share of the face height counts as closed


def face_height(points: npt.NDArray[np.floating]) -> float:
    """Forehead to chin on the mesh, in pixels: the scale face measures are taken in."""
    return float(np.linalg.norm(points[FOREHEAD, :2] - points[CHIN, :2]))


def mouth_gap(points: npt.NDArray[np.floating]) -> float:
    """The gap between the lips at their centre, as a share of the face height."""
    face = face_height(points)
    gap = float(np.linalg.norm(points[13, :2] - points[14, :2]))
    return gap / face if face > 0 else 0.0


def close_mouth(points: FloatArray) -> FloatArray:
    """``points`` with the lower lip moved up onto the upper one (unchanged if closed)."""
    if mouth_gap(points) < CLOSED_GAP:
        return points
    out = points.copy()
    upper = points[list(UPPER_INNER)]
    lower = points[list(LOWER_INNER)]
    lift = upper - lower  # (11, 3): how far each column of the lower lip must rise
    region = np.vstack([points[list(LOWER_OUTER), :2], points[list(LOWER_INNER[::-1]), :2]])
    polygon = region.astype(np.float32).reshape(-1, 1, 2)
    columns = lower[:, 0]
    order = np.argsort(columns)
    for index in range(len(points)):
        x, y = float(points[index, 0]), float(points[index, 1])
        on_lip = index in LOWER_INNER or index in LOWER_OUTER
        if not on_lip and cv2.pointPolygonTest(polygon, (x, y), False) < 0:
            continue
        for axis in range(3):
            out[index, axis] += np.interp(x, columns[order], lift[order, axis])
    return out
