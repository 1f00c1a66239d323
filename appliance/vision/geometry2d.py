"""Small 2-D vector helpers."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def cross2(a: npt.NDArray[np.floating], b: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    """z of the cross product of 2-D vectors (twice the signed triangle area)."""
    out: npt.NDArray[np.float64] = (a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]).astype(
        np.float64
    )
    return out
