"""Fast downscaling for thumbnails (statistics, masks, detector inputs).

OpenCV's area averaging (``INTER_AREA``) is fast only for integer factors; for
any other factor it is about 25 times slower than a bilinear resize (0.6 ms
for a 350 px face to 96 px). A thumbnail is therefore halved by ``pyrDown``
(a 5x5 Gaussian and every other pixel, so nothing aliases) while it stays at
least twice the wanted size, and only the last step, under 2x, is averaged.
"""

from __future__ import annotations

from typing import TypeVar

import cv2
import numpy as np
import numpy.typing as npt

T = TypeVar("T", np.uint8, np.uint16, np.float32)


def thumbnail(image: npt.NDArray[T], size: tuple[int, int]) -> npt.NDArray[T]:
    """``image`` scaled down (or not) to ``size`` (width, height), area-averaged."""
    small = image
    while small.shape[1] >= 2 * size[0] and small.shape[0] >= 2 * size[1]:
        small = np.asarray(cv2.pyrDown(small), image.dtype)
    if (small.shape[1], small.shape[0]) == size:
        return small
    return np.asarray(cv2.resize(small, size, interpolation=cv2.INTER_AREA), image.dtype)
