"""Delaunay triangulation of the face mesh, as vertex indices."""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.geometry2d import cross2
from appliance.vision.mesh import MESH_POINTS
from appliance.vision.types import FloatArray

IntArray = npt.NDArray[np.int32]


def delaunay(points: FloatArray) -> IntArray:
    """Triangles (T, 3) of indices into ``points[:468]``, degenerate ones dropped."""
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
