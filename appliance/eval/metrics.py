"""The figures of ``mirror eval`` as pure functions of arrays.

- identity: Euclidean descriptor distances and the share of frames that moved
  towards the identity (:func:`moved_share`);
- expression: Pearson correlation of a blendshape's original and swapped scores
  over the frames (:func:`correlation`);
- temporal stability: mean absolute frame-to-frame change inside the face
  region, swapped over original (:func:`region_change`, :func:`stability_ratio`);
- seams: gradient energy (squared Sobel magnitude) on the mask boundary over the
  mean of the energies just inside and just outside it (:func:`seam_energy`).

Undefined figures (no samples, a constant series) are None, never NaN.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import cv2
import numpy as np
import numpy.typing as npt

logger = logging.getLogger(__name__)

MIN_STD = 1e-6  # a series that varies less than this has no defined correlation
MIN_SAMPLES = 3
# a blendshape whose original score varies less than this (std) over a clip was
# not really made there (e.g. no smile at all): its correlation is not reported
MIN_EXPRESSION_STD = 0.05
SEAM_RING = (2, 4)  # inner and outer ring: between 2 and 4 band widths from the boundary

Image = npt.NDArray[np.uint8]


def distance(a: npt.NDArray[np.floating], b: npt.NDArray[np.floating]) -> float:
    """Euclidean distance of two descriptors."""
    return float(np.linalg.norm(np.asarray(a, np.float64) - np.asarray(b, np.float64)))


def mean_or_none(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def moved_share(d_src: Sequence[float], d_orig: Sequence[float]) -> float | None:
    """Share of frames whose swapped face is closer to the identity than to the original."""
    if len(d_src) != len(d_orig):
        raise ValueError("d_src and d_orig must pair up frame by frame")
    if not d_src:
        return None
    return float(np.mean(np.asarray(d_src) < np.asarray(d_orig)))


def correlation(
    a: Sequence[float], b: Sequence[float], min_variation: float = MIN_STD
) -> float | None:
    """Pearson correlation of a reference series ``a`` and a follower ``b``.

    None when ``a`` varies less than ``min_variation`` (standard deviation):
    the reference shows nothing to follow, and noise would decide the figure.
    A constant ``b`` against a varying ``a`` followed nothing: 0.
    """
    if len(a) != len(b):
        raise ValueError("series must pair up frame by frame")
    if len(a) < MIN_SAMPLES:
        return None
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if x.std() < max(min_variation, MIN_STD):
        return None
    if y.std() < MIN_STD:
        return 0.0
    return float(np.corrcoef(x, y)[0, 1])


def mean_abs_difference(a: Sequence[float], b: Sequence[float]) -> float | None:
    if len(a) != len(b):
        raise ValueError("series must pair up frame by frame")
    if not a:
        return None
    return float(np.mean(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def _gray(image: Image) -> npt.NDArray[np.float32]:
    if image.ndim == 3:
        image = np.asarray(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), np.uint8)
    return image.astype(np.float32)


def region_change(previous: Image, current: Image, mask: Image) -> float | None:
    """Mean absolute grey-level change between two frames inside ``mask``."""
    inside = mask > 0
    if not inside.any():
        return None
    diff = np.abs(_gray(current) - _gray(previous))
    return float(diff[inside].mean())


def stability_ratio(swapped: Sequence[float], original: Sequence[float]) -> float | None:
    """Total frame-to-frame change of the swapped frames over that of the originals.

    1 means the swap flickers no more than the visitor's own face did.
    """
    if len(swapped) != len(original):
        raise ValueError("changes must pair up frame by frame")
    total = float(np.sum(original))
    if not original or total <= 0.0:
        return None
    return float(np.sum(swapped)) / total


def _signed_distance(mask: Image) -> npt.NDArray[np.float32]:
    """Distance to the mask boundary in pixels: positive inside, negative outside."""
    inside = (mask > 127).astype(np.uint8)
    d_in = cv2.distanceTransform(inside, cv2.DIST_L2, 3)
    d_out = cv2.distanceTransform(1 - inside, cv2.DIST_L2, 3)
    return np.where(inside > 0, d_in, -d_out).astype(np.float32)


def seam_energy(image: Image, mask: Image, band_px: int) -> float | None:
    """Gradient energy within ``band_px`` of the mask boundary over the mean energy of
    the rings just inside and just outside it; None when a ring is empty or flat.

    Around 1: the boundary is no busier than its surroundings; a hard-edged paste
    scores well above a feathered one.
    """
    gray = _gray(image)
    gx = cv2.Sobel(gray, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(gray, cv2.CV_32F, 0, 1, ksize=3)
    energy = gx * gx + gy * gy
    signed = _signed_distance(mask)
    near, far = SEAM_RING[0] * band_px, SEAM_RING[1] * band_px
    boundary = np.abs(signed) <= band_px
    inner = (signed > near) & (signed <= far)
    outer = (signed < -near) & (signed >= -far)
    if not (boundary.any() and inner.any() and outer.any()):
        return None
    reference = (float(energy[inner].mean()) + float(energy[outer].mean())) / 2.0
    if reference <= 0.0:
        return None
    return float(energy[boundary].mean()) / reference
