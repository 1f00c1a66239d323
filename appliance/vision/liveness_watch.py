"""LIVE is not forever: whether a LIVE track still follows the live face that earned it.

A visitor who blinked could otherwise raise a printed photo over their face:
the tracker follows onto the photo and the photo would be swapped. While a
track is LIVE, ``LiveWatch`` looks at its raw landmarks frame by frame and
names the first sign that it no longer follows a live face:

- ``jump``: the face's size (3-D inter-ocular distance) changes by more than
  ``SCALE_JUMP`` (log ratio) or its centre moves more than ``CENTRE_JUMP``
  inter-ocular distances between two frames at most ``JUMP_GAP_S`` apart:
  no head moves like that, a photo raised over the face does (the tracker
  snapped onto another face: on the media, a photo raised over the face in a
  tenth of a second changed the size by 0.32 and moved the centre by 0.49,
  where the real videos and their variants stay below 0.1 and 0.2);
- ``planar``: an apparent yaw change of ``PLANAR_DEG`` against a recent frame that a
  homography explains (sideways misfit below ``PLANAR_MAX``, the turn
  check's measure) on ``TURN_FRAMES`` frames in a row: a tilted sheet;
- ``still eyes``: the irises' positions within the eye openings varied by
  less than ``STILL_STD`` eye widths (standard deviation) over the last
  ``STILL_S`` seconds (real people on the media and all their variants: at
  least 0.025 over any 3 s; a photo held over the face, with tremor and
  camera noise: at most 0.011).

The gate then makes the track UNVERIFIED again: it needs a new blink or turn.
"""

from __future__ import annotations

import logging
import math
from collections import deque

import numpy as np

from appliance.vision.head_pose import F64, PoseReference, pose_xy, sideways_parallax
from appliance.vision.liveness_evidence import (
    TURN_CANDIDATES,
    TURN_FRAMES,
    TURN_WINDOW_S,
)
from appliance.vision.tracker import inter_ocular
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

SCALE_JUMP = 0.2  # |log(size now / size before)| between close frames
CENTRE_JUMP = 0.35  # centre motion between close frames, inter-ocular distances
JUMP_GAP_S = 0.15  # frames further apart than this are not compared (a gap in tracking)
PLANAR_DEG = 20.0  # apparent yaw change (degrees) that must show parallax
PLANAR_MAX = 0.01  # sideways homography misfit below which a turn is a tilted sheet
STILL_S = 3.0  # how long the eyes may stay perfectly still
STILL_STD = 0.016  # iris spread (eye widths) below which the eyes are "perfectly still"
# iris centre, and the eye's two corners, for each eye
IRISES = ((468, 33, 133), (473, 362, 263))


def iris_offsets(points: FloatArray) -> tuple[float, float]:
    """Each iris's offset from its eye's centre along the eye, in eye widths."""
    out: list[float] = []
    for iris, a, b in IRISES:
        start, end = points[a, :2].astype(np.float64), points[b, :2].astype(np.float64)
        width = float(np.linalg.norm(end - start))
        if width <= 0:
            return (math.nan, math.nan)
        axis = (end - start) / width
        out.append(float(np.dot(points[iris, :2] - (start + end) / 2, axis)) / width)
    return out[0], out[1]


class LiveWatch:
    """One LIVE track; ``update`` names why it stopped looking live, or returns None."""

    def __init__(self, frame_size: tuple[int, int]) -> None:
        self.frame_size = frame_size
        self._last: tuple[int, float, FloatArray] | None = None  # stamp, size, centre
        self._reference: PoseReference | None = None
        self._poses: deque[tuple[int, float, F64]] = deque()  # stamp, yaw, pose xy
        self._planar_run = 0
        self._irises: deque[tuple[int, float, float]] = deque()

    def update(self, points: FloatArray, stamp_ns: int) -> str | None:
        for check in (self._jump, self._planar, self._still_eyes):
            reason = check(points, stamp_ns)
            if reason is not None:
                return reason
        return None

    def _jump(self, points: FloatArray, stamp_ns: int) -> str | None:
        size = inter_ocular(points)
        centre = points[:, :2].astype(np.float64).mean(axis=0)
        last, self._last = self._last, (stamp_ns, size, centre)
        if last is None or size <= 0 or last[1] <= 0:
            return None
        if (stamp_ns - last[0]) / 1e9 > JUMP_GAP_S:
            return None
        scale = abs(math.log(size / last[1]))
        moved = float(np.linalg.norm(centre - last[2])) / last[1]
        if scale > SCALE_JUMP or moved > CENTRE_JUMP:
            return f"jump (size {scale:.2f}, centre {moved:.2f})"
        return None

    def _planar(self, points: FloatArray, stamp_ns: int) -> str | None:
        if self._reference is None:
            self._reference = PoseReference(points, self.frame_size)
        angles = self._reference.angles(points)
        if angles is None:
            self._planar_run = 0
            return None
        yaw, xy = angles[0], pose_xy(points)
        while self._poses and stamp_ns - self._poses[0][0] > TURN_WINDOW_S * 1e9:
            self._poses.popleft()
        far = sorted(
            (p for p in self._poses if abs(yaw - p[1]) >= PLANAR_DEG),
            key=lambda p: -abs(yaw - p[1]),
        )[:TURN_CANDIDATES]
        self._poses.append((stamp_ns, yaw, xy))
        flat = bool(far) and all(sideways_parallax(p[2], xy, points) < PLANAR_MAX for p in far)
        self._planar_run = self._planar_run + 1 if flat else 0
        return "planar" if self._planar_run >= TURN_FRAMES else None

    def _still_eyes(self, points: FloatArray, stamp_ns: int) -> str | None:
        right, left = iris_offsets(points)
        if math.isnan(right):
            return None
        self._irises.append((stamp_ns, right, left))
        if (stamp_ns - self._irises[0][0]) / 1e9 < STILL_S:
            return None
        while (stamp_ns - self._irises[1][0]) / 1e9 >= STILL_S:
            self._irises.popleft()
        spread = float(np.std(np.array([(r, le) for _, r, le in self._irises]), axis=0).mean())
        return f"still eyes ({spread:.3f})" if spread < STILL_STD else None
