"""A photo of a frontal face redrawn as if the head were turned (previews only).

The upload's previews and the identity verdict show an identity on the
embedded demo faces; both are frontal photos, and a turned visitor is where
a completed, turned identity photo shows its seams. Here the face's 478
landmarks are rotated about the head's vertical axis (their z is in the same
pixels as x) and the photo is redrawn triangle by triangle from where each
triangle was to where it goes, the far ones first so the near side covers
them; a ring around the face and the photo's border stay where they are, so
the background holds still and only the head turns.
"""

from __future__ import annotations

import logging
import math

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.mesh import FACE_OVAL
from appliance.vision.triangulation import delaunay_all
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

Image = npt.NDArray[np.uint8]
RING = 1.6  # the fixed ring around the face, in face-oval radii from its centre
RING_POINTS = 24


def turned_points(points: FloatArray, yaw_deg: float) -> FloatArray:
    """``points`` (478, 3) turned by ``yaw_deg`` about the head's vertical axis."""
    yaw = math.radians(yaw_deg)
    xyz = np.asarray(points, np.float64)
    centre = xyz[:468].mean(axis=0)
    rel = xyz - centre
    out = xyz.copy()
    out[:, 0] = centre[0] + rel[:, 0] * math.cos(yaw) + rel[:, 2] * math.sin(yaw)
    out[:, 2] = centre[2] - rel[:, 0] * math.sin(yaw) + rel[:, 2] * math.cos(yaw)
    return out.astype(np.float32)


def _anchors(points: FloatArray, shape: tuple[int, ...]) -> FloatArray:
    """Points that stay: a ring around the face and the image's border."""
    oval = np.asarray(points[list(FACE_OVAL), :2], np.float64)
    centre = oval.mean(axis=0)
    radius = np.abs(oval - centre).max(axis=0) * RING
    angles = np.linspace(0.0, 2 * np.pi, RING_POINTS, endpoint=False)
    ring = centre + np.stack([np.cos(angles), np.sin(angles)], axis=1) * radius
    h, w = shape[:2]
    edges = [(x, y) for x in (0, w / 2, w - 1) for y in (0, h / 2, h - 1)]
    border = [p for p in edges if p != (w / 2, h / 2)]
    out = np.vstack([ring, np.array(border, np.float64)])
    out[:, 0] = out[:, 0].clip(0, w - 1)
    out[:, 1] = out[:, 1].clip(0, h - 1)
    return out.astype(np.float32)


def turned_view(image: Image, points: FloatArray, yaw_deg: float) -> Image:
    """``image`` with the face of landmarks ``points`` turned by ``yaw_deg``."""
    turned = turned_points(points, yaw_deg)
    anchors = _anchors(points, image.shape)
    src = np.vstack([points[:468, :2], anchors]).astype(np.float32)
    dst = np.vstack([turned[:468, :2], anchors]).astype(np.float32)
    # the landmarks' z grows away from the camera; the anchors are as far as the face's back
    far = float(turned[:468, 2].max())
    depth = np.concatenate([turned[:468, 2], np.full(len(anchors), far, np.float32)])
    tris = delaunay_all(src)
    order = np.argsort(-depth[tris].mean(axis=1))  # far triangles first
    out = image.copy()
    h, w = image.shape[:2]
    for t in tris[order]:
        a, b = src[t], dst[t]
        x0, y0 = np.floor(b.min(axis=0)).astype(int)
        x1, y1 = np.ceil(b.max(axis=0)).astype(int) + 1
        x0, y0, x1, y1 = max(0, x0), max(0, y0), min(w, x1), min(h, y1)
        if x1 <= x0 or y1 <= y0:
            continue
        matrix = cv2.getAffineTransform(a, b - np.array([x0, y0], np.float32))
        patch = cv2.warpAffine(
            image, matrix, (x1 - x0, y1 - y0), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
        )
        mask = np.zeros((y1 - y0, x1 - x0), np.uint8)
        cv2.fillConvexPoly(mask, np.round(b - (x0, y0)).astype(np.int32), 255, cv2.LINE_8)
        cv2.copyTo(patch, mask, out[y0:y1, x0:x1])
    return out
