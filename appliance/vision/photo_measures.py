"""Measures of one face in a still photo: head pose, size, sharpness, light.

Everything here is a number; what counts as good is decided in
``identity_check``. The head pose comes from the 478-point mesh alone (no
reference face): the landmark model's depth is in the same scale as x and y,
so the face's left-right axis (the mean of nine mirrored point pairs, the
person's right to their left) and its up axis (chin to forehead, made
perpendicular to it) are 3-D directions in camera space.

Signs, as seen by the camera: yaw > 0 is the head turned to the person's own
left (the nose points to the right of the photo), pitch > 0 is the chin up,
roll > 0 is the head tilted towards the person's left shoulder (towards the
right of the photo). Mirroring a photo flips the sign of yaw and roll.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.mesh import CHIN, FACE_OVAL, FOREHEAD, LEFT_EYE_EAR, RIGHT_EYE_EAR
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

Image = npt.NDArray[np.uint8]
F64 = npt.NDArray[np.float64]

# (person's right, person's left) point pairs: eye corners, cheek and jaw
# outline, temples, mouth corners, brows
MIRRORED_PAIRS = (
    (33, 263),
    (133, 362),
    (234, 454),
    (127, 356),
    (61, 291),
    (93, 323),
    (132, 361),
    (70, 300),
    (105, 334),
)
# The mesh's chin-to-forehead line leans this far back (degrees) on a level head:
# the median of the frontal photos (astronaut, Grace Hopper and the shared
# portraits: -14 to -0.3, median -9).
LEVEL_PITCH_DEG = -9.0
DETAIL_EYE_PX = 64.0  # sharpness is measured with the face scaled to this eye distance
_CHIN_AT = FACE_OVAL.index(CHIN)


@dataclass(frozen=True)
class HeadPose:
    yaw: float
    pitch: float
    roll: float


@dataclass(frozen=True)
class Light:
    """Brightness (0-255 luma) over the face."""

    median: float  # the face's median luma
    clipped: float  # share of the face at pure white or pure black
    sides: tuple[float, float]  # median luma of the person's right and left half

    @property
    def evenness(self) -> float:
        """The darker half's median luma over the brighter half's (1: even)."""
        return min(self.sides) / max(*self.sides, 1.0)


def head_pose(points: FloatArray) -> HeadPose:
    """Yaw, pitch and roll in degrees (signs in the module docstring)."""
    p = np.asarray(points, np.float64)
    across: F64 = np.mean([p[left] - p[right] for right, left in MIRRORED_PAIRS], axis=0)
    across /= max(float(np.linalg.norm(across)), 1e-9)
    up = p[FOREHEAD] - p[CHIN]
    up -= across * float(np.dot(up, across))
    up /= max(float(np.linalg.norm(up)), 1e-9)
    yaw = math.degrees(math.asin(float(np.clip(across[2], -1.0, 1.0))))
    roll = math.degrees(math.atan2(float(across[1]), float(across[0])))
    pitch = math.degrees(math.atan2(float(up[2]), float(-up[1]))) - LEVEL_PITCH_DEG
    return HeadPose(yaw=yaw, pitch=pitch, roll=roll)


def eye_distance(points: FloatArray) -> float:
    """Pixels between the outer eye corners (the measure enrolment's minimum uses)."""
    return float(np.linalg.norm(points[RIGHT_EYE_EAR[0], :2] - points[LEFT_EYE_EAR[3], :2]))


def face_mask(
    shape: tuple[int, ...], points: FloatArray, ring: tuple[int, ...] = FACE_OVAL
) -> Image:
    mask = np.zeros(shape[:2], np.uint8)
    poly = np.round(np.asarray(points)[list(ring), :2]).astype(np.int32)
    cv2.fillPoly(mask, [poly], 255)
    return mask


def sharpness(image: Image, points: FloatArray) -> float:
    """Variance of the Laplacian inside the face, with the face scaled to a fixed size."""
    eyes = eye_distance(points)
    x0, y0, x1, y1 = _box(image, points)
    if eyes <= 0 or x1 - x0 < 4 or y1 - y0 < 4:
        return 0.0
    scale = DETAIL_EYE_PX / eyes
    crop = image[y0:y1, x0:x1]
    size = (max(4, round((x1 - x0) * scale)), max(4, round((y1 - y0) * scale)))
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_CUBIC
    gray = cv2.cvtColor(cv2.resize(crop, size, interpolation=interp), cv2.COLOR_BGR2GRAY)
    local = np.asarray(points, np.float64)[:, :2].copy()
    local -= (x0, y0)
    local *= (size[0] / (x1 - x0), size[1] / (y1 - y0))
    inner = cv2.erode(face_mask(gray.shape, local.astype(np.float32)), np.ones((5, 5), np.uint8))
    lap = cv2.Laplacian(gray, cv2.CV_64F)
    values = lap[inner > 0]
    return float(values.var()) if values.size > 16 else 0.0


def light(image: Image, points: FloatArray) -> Light:
    """Median luma, the clipped share and the two halves' medians over the face."""
    luma = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    face = luma[face_mask(luma.shape, points) > 0]
    if face.size == 0:
        return Light(0.0, 0.0, (0.0, 0.0))
    clipped = float(((face >= 250) | (face <= 5)).mean())
    # FACE_OVAL runs from the forehead over the person's left side to the chin
    left = FACE_OVAL[: _CHIN_AT + 1]
    right = (*FACE_OVAL[_CHIN_AT:], FOREHEAD)
    halves = []
    for ring in (right, left):
        values = luma[face_mask(luma.shape, points, ring) > 0]
        halves.append(float(np.median(values)) if values.size else 0.0)
    return Light(float(np.median(face)), clipped, (halves[0], halves[1]))


def _box(image: Image, points: FloatArray) -> tuple[int, int, int, int]:
    h, w = image.shape[:2]
    xy = np.asarray(points)[:468, :2]
    x0, y0 = (max(0, int(v)) for v in xy.min(axis=0))
    x1 = min(w, int(xy[:, 0].max()) + 1)
    y1 = min(h, int(xy[:, 1].max()) + 1)
    return x0, y0, x1, y1
