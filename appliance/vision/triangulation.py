"""Delaunay triangulation of the face mesh, as vertex indices."""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.geometry2d import cross2
from appliance.vision.mesh import (
    FACE_OVAL,
    INNER_MOUTH,
    LEFT_BROW,
    LEFT_EYE,
    MESH_POINTS,
    NOSE,
    OUTER_LIPS,
    RIGHT_BROW,
    RIGHT_EYE,
)
from appliance.vision.types import FloatArray

IntArray = npt.NDArray[np.int32]


FEATURES = (
    FACE_OVAL + RIGHT_EYE + LEFT_EYE + INNER_MOUTH + OUTER_LIPS + RIGHT_BROW + LEFT_BROW + NOSE
)
SWAP_MESH_POINTS = 200  # feature lines plus evenly spread points: about 370 triangles


def swap_mesh(points: FloatArray, count: int = SWAP_MESH_POINTS) -> IntArray:
    """Indices of a lighter mesh: every feature line, the rest spread evenly (farthest first).

    The full 468-point mesh has about 900 triangles; the swap's cost per face is
    mostly per triangle, and the cheeks and forehead need far fewer.
    """
    xy = points[:MESH_POINTS, :2].astype(np.float64)
    chosen = list(dict.fromkeys(FEATURES))
    nearest = np.linalg.norm(xy[:, None] - xy[chosen][None], axis=2).min(axis=1)
    while len(chosen) < min(count, MESH_POINTS):
        pick = int(nearest.argmax())
        chosen.append(pick)
        nearest = np.minimum(nearest, np.linalg.norm(xy - xy[pick], axis=1))
    return np.asarray(sorted(chosen), np.int32)


def delaunay(points: FloatArray, subset: IntArray | None = None) -> IntArray:
    """Triangles (T, 3) of indices into ``points[:468]``, degenerate ones dropped.

    With ``subset`` only those points are triangulated (indices stay global).
    """
    if subset is not None:
        local = delaunay_all(points[subset])
        return np.ascontiguousarray(subset[local])
    return delaunay_all(points)


def delaunay_all(points: FloatArray) -> IntArray:
    """Triangles over every point of ``points[:468]``."""
    xy = points[:MESH_POINTS, :2].astype(np.float32)
    lo = xy.min(axis=0) - 2
    hi = xy.max(axis=0) + 2
    subdiv = cv2.Subdiv2D((int(lo[0]), int(lo[1]), int(hi[0] - lo[0]) + 2, int(hi[1] - lo[1]) + 2))
    for x, y in xy:
        subdiv.insert((float(x), float(y)))
    corners = np.asarray(subdiv.getTriangleList(), np.float32).reshape(-1, 3, 2)
    inside = np.all((corners >= lo) & (corners <= hi), axis=(1, 2))
    corners = corners[inside]
    dist = np.linalg.norm(corners[:, :, None, :] - xy[None, None, :, :], axis=-1)
    tris = dist.argmin(axis=-1).astype(np.int32)
    distinct = (tris[:, 0] != tris[:, 1]) & (tris[:, 1] != tris[:, 2]) & (tris[:, 0] != tris[:, 2])
    tris = tris[distinct]
    a, b, c = xy[tris[:, 0]], xy[tris[:, 1]], xy[tris[:, 2]]
    area = np.abs(cross2(b - a, c - a)) / 2
    return np.ascontiguousarray(tris[area > 1e-3])
