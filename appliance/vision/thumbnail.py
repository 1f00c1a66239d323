"""Fast downscaling for thumbnails (statistics, masks, detector inputs).

OpenCV's area averaging (``INTER_AREA``) is fast only for integer factors; for
any other factor it is about 25 times slower than a bilinear resize (0.6 ms
for a 350 px face to 96 px). A thumbnail is therefore halved by ``pyrDown``
(a 5x5 Gaussian and every other pixel, so nothing aliases) while it stays at
least twice the wanted size; the last step, under 2x of an image the Gaussian
already smoothed, is bilinear (0.05 ms against 0.2 for the area average of
a 175 px face to 96 px; 0.8 grey levels apart on average).
"""

from __future__ import annotations

from typing import TypeVar

import cv2
import numpy as np
import numpy.typing as npt

T = TypeVar("T", np.uint8, np.uint16, np.float32)


def thumbnail(image: npt.NDArray[T], size: tuple[int, int]) -> npt.NDArray[T]:
    """``image`` scaled down (or not) to ``size`` (width, height), near its area average."""
    small = image
    while small.shape[1] >= 2 * size[0] and small.shape[0] >= 2 * size[1]:
        small = np.asarray(cv2.pyrDown(small), image.dtype)
    if (small.shape[1], small.shape[0]) == size:
        return small
    inter = cv2.INTER_LINEAR if _under_twice(small, size) else cv2.INTER_AREA
    return np.asarray(cv2.resize(small, size, interpolation=inter), image.dtype)


def _under_twice(image: npt.NDArray[np.generic], size: tuple[int, int]) -> bool:
    return bool(image.shape[1] < 2 * size[0] and image.shape[0] < 2 * size[1])
