"""Rigid 3-D alignment of landmark sets: a similarity (scale, rotation, shift).

``similarity(src, dst)`` is Umeyama's least-squares fit ``dst ~ s * R @ src + t``
over corresponding points; used to put a face mesh into another face's pose.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

logger = logging.getLogger(__name__)

Points = npt.NDArray[np.floating]
F64 = npt.NDArray[np.float64]

# Mesh points that move little with expression: forehead, nose bridge and tip,
# outer eye corners, temples and cheekbones.
RIGID_POINTS = (10, 151, 9, 8, 168, 6, 197, 195, 5, 4, 1, 33, 263, 127, 356, 234, 454, 116, 345)


@dataclass(frozen=True)
class Similarity:
    """``x -> scale * R @ x + shift`` for row vectors: ``scale * x @ R.T + shift``."""

    scale: float
    rotation: F64  # (3, 3)
    shift: F64  # (3,)

    def apply(self, points: Points) -> F64:
        out: F64 = self.scale * (np.asarray(points, np.float64) @ self.rotation.T) + self.shift
        return out

    def invert(self, points: Points) -> F64:
        out: F64 = ((np.asarray(points, np.float64) - self.shift) @ self.rotation) / self.scale
        return out


def similarity(src: Points, dst: Points) -> Similarity:
    """The least-squares similarity taking ``src`` (N, 3) onto ``dst`` (N, 3)."""
    a = np.asarray(src, np.float64)
    b = np.asarray(dst, np.float64)
    mean_a, mean_b = a.mean(axis=0), b.mean(axis=0)
    ca, cb = a - mean_a, b - mean_b
    var_a = float((ca**2).sum() / len(a))
    cov = cb.T @ ca / len(a)
    u, sing, vt = np.linalg.svd(cov)
    sign = np.eye(3)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        sign[2, 2] = -1.0
    rotation = u @ sign @ vt
    scale = float(np.trace(np.diag(sing) @ sign) / var_a) if var_a > 0 else 1.0
    shift = mean_b - scale * rotation @ mean_a
    return Similarity(scale, rotation, shift)
