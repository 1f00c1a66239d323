"""Things in front of the face (a hand, a phone, a fringe of hair) stay in front.

The landmark model places a full face even behind a hand, so the swap would
paint over it. Per face and frame, the visitor's own skin is modelled from
the centre of their face (median and spread of the chroma, median
brightness); inside the face outline, away from the eyes, brows and lips,
pixels far from that skin in chroma or much darker are candidates, and the
candidate regions that are large and reach the outline band (whatever is in
front comes from outside the face) are occluders. The swap leaves them as
they are. A hand of the visitor's own skin colour is not told apart.
"""

from __future__ import annotations

import logging

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.mesh import (
    FACE_OVAL,
    INNER_MOUTH,
    LEFT_BROW,
    LEFT_EYE,
    OUTER_LIPS,
    RIGHT_BROW,
    RIGHT_EYE,
)
from appliance.vision.thumbnail import thumbnail
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

Image = npt.NDArray[np.uint8]
Mask = npt.NDArray[np.uint8]

WORK_SIDE = 96  # the test runs on a thumbnail of the face box this size
# the face centre the skin is sampled from: around the nose and the upper cheeks
SKIN_SAMPLE = (
    117,
    118,
    119,
    100,
    47,
    114,
    188,
    122,
    6,
    351,
    412,
    343,
    277,
    329,
    348,
    347,
    346,
    280,
    425,
    411,
    427,
    434,
    430,
    211,
    214,
    207,
    187,
    205,
    50,
)
CHROMA_SIGMAS = 5.0  # chroma this many spreads away from the skin: not skin
MIN_SPREAD = 3.0  # chroma spread floor (a very even face would flag everything)
DARK_SHARE = 0.4  # brighter than this share of the skin's brightness: not "much darker"
MIN_AREA = 0.02  # an occluder covers at least this share of the face
BAND = 0.12  # outline band, in face widths, an occluder must reach into
_OPEN = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5))
_FEATURES = (RIGHT_EYE, LEFT_EYE, RIGHT_BROW, LEFT_BROW, OUTER_LIPS, INNER_MOUTH)


def _poly(points: FloatArray, ring: tuple[int, ...], scale: float) -> npt.NDArray[np.int32]:
    return np.round(points[list(ring), :2] * scale).astype(np.int32)


def _medians(values: npt.NDArray[np.int16]) -> npt.NDArray[np.float32]:
    """The median of each column of small non-negative integers, by counting (np.median
    sorts: 0.65 ms for a face's skin sample, this 0.05)."""
    half = (len(values) - 1) / 2
    out = np.empty(values.shape[1], np.float32)
    for c in range(values.shape[1]):
        below = np.cumsum(np.bincount(values[:, c]))
        low, high = np.searchsorted(below, [np.floor(half) + 1, np.ceil(half) + 1])
        out[c] = (low + high) / 2
    return out


def occluders(roi: Image, visitor: FloatArray) -> Mask:
    """255 where something covers the visitor's face in ``roi`` (landmarks in ROI pixels)."""
    h, w = roi.shape[:2]
    scale = min(1.0, WORK_SIDE / max(h, w))
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    small = np.asarray(thumbnail(roi, size), np.uint8)
    ycc8 = np.asarray(cv2.cvtColor(small, cv2.COLOR_BGR2YCrCb), np.uint8)
    ycc = ycc8.astype(np.float32)
    face = np.zeros(small.shape[:2], np.uint8)
    cv2.fillPoly(face, [_poly(visitor, FACE_OVAL, scale)], 255)
    sample = np.zeros_like(face)
    cv2.fillPoly(sample, [cv2.convexHull(_poly(visitor, SKIN_SAMPLE, scale))], 255)
    skin = ycc8[(sample > 0) & (face > 0)].astype(np.int16)
    if len(skin) < 20:
        return np.zeros((h, w), np.uint8)
    centre = _medians(skin)
    # the median absolute deviation, counted in half units (the centre may be a half)
    twice = np.abs(2 * skin - np.round(2 * centre).astype(np.int16))
    spread = np.maximum(1.4826 * _medians(twice) / 2, MIN_SPREAD)
    chroma = np.hypot((ycc[..., 1] - centre[1]) / spread[1], (ycc[..., 2] - centre[2]) / spread[2])
    odd = (chroma > CHROMA_SIGMAS) | (ycc[..., 0] < DARK_SHARE * centre[0])
    allowed = face.copy()
    for ring in _FEATURES:
        hull = cv2.convexHull(_poly(visitor, ring, scale))
        cv2.fillPoly(allowed, [hull], 0)
        cv2.polylines(allowed, [hull], True, 0, 2)
    candidates = (odd & (allowed > 0)).astype(np.uint8)
    # thin lines (the outline's edge, a strand of hair, a wrinkle) are not things in front
    candidates = np.asarray(cv2.morphologyEx(candidates, cv2.MORPH_OPEN, _OPEN), np.uint8)
    found = _reaching_the_band(candidates, face, visitor, scale)
    if not found.any():
        return np.zeros((h, w), np.uint8)
    found = np.asarray(cv2.dilate(found, np.ones((3, 3), np.uint8)), np.uint8)
    out = np.asarray(cv2.resize(found, (w, h), interpolation=cv2.INTER_LINEAR), np.uint8)
    out = np.where(out > 0, 255, 0).astype(np.uint8)
    grow = 2 * max(2, round(0.02 * max(h, w))) + 1  # a margin for the thumbnail's coarseness
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (grow, grow))
    return np.asarray(cv2.dilate(out, kernel), np.uint8)


def _reaching_the_band(candidates: Mask, face: Mask, visitor: FloatArray, scale: float) -> Mask:
    """The candidate regions big enough and touching the face outline band."""
    face_area = int((face > 0).sum())
    oval = _poly(visitor, FACE_OVAL, scale)
    width = max(1, int(oval[:, 0].max() - oval[:, 0].min()))
    band_px = max(1, round(BAND * width))
    inner = cv2.erode(face, np.ones((2 * band_px + 1, 2 * band_px + 1), np.uint8))
    band = (face > 0) & (inner == 0)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(candidates, connectivity=8)
    out = np.zeros_like(candidates)
    for label in range(1, count):
        if stats[label, cv2.CC_STAT_AREA] < MIN_AREA * face_area:
            continue
        region = labels == label
        if (region & band).any():
            out[region] = 255
    return out
