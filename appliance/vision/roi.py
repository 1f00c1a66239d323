"""Rotated square crops: from a detection or from landmarks, and their affine maps."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from appliance.vision.types import Detection, FloatArray, Roi

ROI_SCALE = 1.5
# Eye corners used for the roll angle of a landmark ROI (image-left eye, image-right eye).
_LM_EYE_A, _LM_EYE_B = 33, 263


def _angle(a: FloatArray, b: FloatArray) -> float:
    return math.atan2(float(b[1] - a[1]), float(b[0] - a[0]))


def roi_from_detection(det: Detection, scale: float = ROI_SCALE) -> Roi:
    x0, y0, x1, y1 = det.box
    size = max(x1 - x0, y1 - y0) * scale
    return Roi((x0 + x1) / 2, (y0 + y1) / 2, size, _angle(det.keypoints[0], det.keypoints[1]))


def roi_from_landmarks(points: FloatArray, scale: float = ROI_SCALE) -> Roi:
    """The ROI for the next frame: rotated bounding square of the mesh, enlarged."""
    angle = _angle(points[_LM_EYE_A], points[_LM_EYE_B])
    xy = points[:468, :2]
    centre = (xy.min(axis=0) + xy.max(axis=0)) / 2
    c, s = math.cos(-angle), math.sin(-angle)
    rotated = (xy - centre) @ np.array([[c, s], [-s, c]], np.float32)
    extent = rotated.max(axis=0) - rotated.min(axis=0)
    mid = (rotated.max(axis=0) + rotated.min(axis=0)) / 2
    c2, s2 = math.cos(angle), math.sin(angle)
    mid_img = centre + np.array([mid[0] * c2 - mid[1] * s2, mid[0] * s2 + mid[1] * c2])
    return Roi(float(mid_img[0]), float(mid_img[1]), float(extent.max()) * scale, angle)


def crop_to_image(roi: Roi, crop_size: int) -> npt.NDArray[np.float64]:
    """2x3 affine mapping crop pixels to image pixels."""
    k = roi.size / crop_size
    c, s = math.cos(roi.angle) * k, math.sin(roi.angle) * k
    half = crop_size / 2
    return np.array(
        [[c, -s, roi.cx - c * half + s * half], [s, c, roi.cy - s * half - c * half]], np.float64
    )
