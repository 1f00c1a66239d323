"""Head rotation from 2-D landmarks (``solvePnP``), and how far they are from a plane.

``PoseReference`` takes one frame's 478 landmarks (x, y in image pixels and
the landmark model's own depth z in the same scale) as the 3-D model of this
face; ``angles`` then solves the pose of a later frame's 2-D landmarks
against it and returns yaw and pitch relative to the reference frame.
The camera is a guess (focal length = frame width, centred): head-pose
*changes* are little affected by it.

``planar_misfit`` asks whether two frames' landmarks could be the same flat
picture seen twice: it fits a homography (least squares, every point) from
one to the other and returns what it leaves unexplained, per point. A photo
moved or tilted is explained to within landmark noise; a real head turning
is not, because points at different depths (nose tip, eye corners, cheeks)
move by different amounts: parallax. ``sideways_parallax`` keeps the part of
the misfit along the eye line, which is where a turn about the vertical axis
puts it; ``planar_residual`` is the whole misfit.
"""

from __future__ import annotations

import logging
import math

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.pose3d import RIGID_POINTS
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

F64 = npt.NDArray[np.float64]

# Points that move little with expression and spread over the face's depth:
# forehead, nose bridge and tip, eye corners, temples, cheekbones, nose wings.
POSE_POINTS = (*RIGID_POINTS, 133, 362, 98, 327)
_INDEX = list(POSE_POINTS)
EYE_OUTER = (33, 263)


def inter_ocular_2d(points: FloatArray | F64) -> float:
    """Distance between the outer eye corners in the image (pixels)."""
    a, b = EYE_OUTER
    return float(np.linalg.norm(points[b, :2] - points[a, :2]))


def pose_xy(points: FloatArray) -> F64:
    """The ``POSE_POINTS`` image positions of a 478-point mesh, float64 (N, 2)."""
    return np.asarray(points[_INDEX, :2], np.float64)


def camera_matrix(frame_size: tuple[int, int]) -> F64:
    """A pinhole camera for a (width, height) frame: focal length = width, centred."""
    w, h = frame_size
    return np.array([[w, 0.0, w / 2.0], [0.0, w, h / 2.0], [0.0, 0.0, 1.0]])


def yaw_pitch(rotation: F64) -> tuple[float, float]:
    """Yaw (about the vertical axis) and pitch (about the horizontal) of a 3x3 rotation, deg."""
    yaw = math.degrees(math.asin(float(np.clip(rotation[0, 2], -1.0, 1.0))))
    pitch = math.degrees(math.atan2(-float(rotation[1, 2]), float(rotation[2, 2])))
    return yaw, pitch


class PoseReference:
    """One frame's landmarks as the 3-D model that later frames' poses are solved against."""

    def __init__(self, points: FloatArray, frame_size: tuple[int, int]) -> None:
        model = np.asarray(points[_INDEX], np.float64).copy()
        model -= model.mean(axis=0)
        self.model = model
        self.camera = camera_matrix(frame_size)
        origin = self._rotation(pose_xy(points))
        self._origin = None if origin is None else origin.T

    def angles(self, points: FloatArray) -> tuple[float, float] | None:
        """Yaw and pitch (degrees) of ``points`` relative to the reference frame, or None
        when ``solvePnP`` finds no pose."""
        rotation = self._rotation(pose_xy(points))
        if rotation is None or self._origin is None:
            return None
        return yaw_pitch(rotation @ self._origin)

    def _rotation(self, image_xy: F64) -> F64 | None:
        ok, rvec, _ = cv2.solvePnP(
            self.model, image_xy, self.camera, None, flags=cv2.SOLVEPNP_SQPNP
        )
        if not ok:
            return None
        rotation, _ = cv2.Rodrigues(rvec)
        out: F64 = np.asarray(rotation, np.float64)
        return out


def planar_misfit(before: F64, after: F64) -> F64 | None:
    """``after`` minus the best homography of ``before`` (both (N, 2) pixels), per point;
    None when no homography fits."""
    matrix = cv2.findHomography(before, after, 0)[0]
    if matrix is None or np.shape(matrix) != (3, 3):  # degenerate points
        return None
    moved = cv2.perspectiveTransform(before[None], matrix)[0]
    out: F64 = after - moved
    return out


def planar_residual(before: F64, after: F64, scale: float) -> float:
    """RMS of ``planar_misfit`` in units of ``scale`` (pixels); infinite when none fits."""
    misfit = planar_misfit(before, after)
    if misfit is None or scale <= 0:
        return math.inf
    return float(np.sqrt((misfit**2).sum(axis=1).mean())) / scale


def sideways_parallax(before: F64, after: F64, points: FloatArray) -> float:
    """RMS of ``planar_misfit`` along the eye line of ``points`` (the 478 landmarks of
    the ``after`` frame), in inter-ocular distances; infinite when no homography fits."""
    misfit = planar_misfit(before, after)
    a, b = EYE_OUTER
    line = np.asarray(points[b, :2] - points[a, :2], np.float64)
    scale = float(np.linalg.norm(line))
    if misfit is None or scale <= 0:
        return math.inf
    along = misfit @ (line / scale)
    return float(np.sqrt((along**2).mean())) / scale
