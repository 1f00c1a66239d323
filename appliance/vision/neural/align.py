"""Five-point alignment: the ArcFace templates and the similarity that meets them.

The five points (in image order: left eye, right eye, nose tip, left and
right mouth corner) come from the 478-point mesh: eye centres are the means
of the eye contours (steady while the gaze moves, unlike the iris centres),
the nose is point 4 (just above the tip, point 1, which sits 4-7 px below the
template's nose in the 112 crop of frontal photos), the mouth corners 61 and 291.

The similarity is the least-squares (Umeyama) fit of the five points to the
template, as insightface's ``norm_crop`` gets from scikit-image's
``SimilarityTransform``: closed form, so the crop does not jitter the way a
robust (LMEDS/RANSAC) estimate on five points can from frame to frame.
"""

from __future__ import annotations

import logging
from typing import Literal

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.mesh import LEFT_EYE, RIGHT_EYE
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

Image = npt.NDArray[np.uint8]
Template = Literal["arcface_112_v2", "arcface_128", "arcface_112_v1"]

# insightface's arcface_dst (112 x 112): the embedder's template.
ARCFACE_112_V2 = np.array(
    [
        [38.2946, 51.6963],
        [73.5318, 51.5014],
        [56.0252, 71.7366],
        [41.5493, 92.3655],
        [70.7299, 92.2041],
    ],
    np.float32,
)
# The older ArcFace template; SimSwap and GHOST were trained on crops made with it.
ARCFACE_112_V1 = np.array(
    [
        [39.7300, 51.1380],
        [72.2700, 51.1380],
        [56.0000, 68.4930],
        [42.4630, 87.0100],
        [69.5370, 87.0100],
    ],
    np.float32,
)
_NOSE = 4
_MOUTH_LEFT, _MOUTH_RIGHT = 61, 291  # in the image: the subject's right corner is on the left
_IMAGE_LEFT_EYE = np.array(RIGHT_EYE)  # the subject's right eye
_IMAGE_RIGHT_EYE = np.array(LEFT_EYE)


def template(name: Template, size: int) -> FloatArray:
    """The five template points for a ``size`` x ``size`` crop.

    ``arcface_128`` is the 112 template shifted 8 px in x and scaled by
    size / 128 (insightface's ``estimate_norm`` for inswapper).
    """
    if name == "arcface_128":
        points = (ARCFACE_112_V2 + np.array([8.0, 0.0], np.float32)) * (size / 128.0)
    elif name == "arcface_112_v1":
        points = ARCFACE_112_V1 * (size / 112.0)
    else:
        points = ARCFACE_112_V2 * (size / 112.0)
    return points.astype(np.float32)


def five_points(points: FloatArray) -> FloatArray:
    """The five alignment points (5, 2) of a 478- (or 468-) point mesh, in its pixels."""
    xy = points[:, :2].astype(np.float32)
    return np.stack(
        [
            xy[_IMAGE_LEFT_EYE].mean(axis=0),
            xy[_IMAGE_RIGHT_EYE].mean(axis=0),
            xy[_NOSE],
            xy[_MOUTH_LEFT],
            xy[_MOUTH_RIGHT],
        ]
    ).astype(np.float32)


def similarity(src: FloatArray, dst: FloatArray) -> FloatArray:
    """The 2x3 similarity (rotation, uniform scale, shift) taking ``src`` closest to ``dst``."""
    src64, dst64 = src.astype(np.float64), dst.astype(np.float64)
    src_mean, dst_mean = src64.mean(axis=0), dst64.mean(axis=0)
    src_c, dst_c = src64 - src_mean, dst64 - dst_mean
    cov = dst_c.T @ src_c / len(src64)
    u, s, vt = np.linalg.svd(cov)
    d = np.ones(2)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        d[1] = -1.0
    rotation = u @ np.diag(d) @ vt
    variance = float(src_c.var(axis=0).sum())
    scale = float(s @ d) / variance if variance > 1e-12 else 1.0
    shift = dst_mean - scale * rotation @ src_mean
    matrix: FloatArray = np.hstack([scale * rotation, shift[:, None]]).astype(np.float32)
    return matrix


def alignment(points: FloatArray, name: Template, size: int) -> FloatArray:
    """The 2x3 affine from image pixels to the aligned ``size`` crop for this face."""
    return similarity(five_points(points), template(name, size))


def warp_crop(image: Image, matrix: FloatArray, size: int) -> Image:
    """Cut the aligned ``size`` x ``size`` crop (black outside the image, as insightface)."""
    crop: Image = np.asarray(
        cv2.warpAffine(image, matrix, (size, size), flags=cv2.INTER_LINEAR, borderValue=0),
        np.uint8,
    )
    return crop


def apply(matrix: FloatArray, xy: FloatArray) -> FloatArray:
    """Points (N, 2) through a 2x3 affine."""
    out: FloatArray = (xy @ matrix[:, :2].T + matrix[:, 2]).astype(np.float32)
    return out
