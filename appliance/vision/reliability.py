"""How much to trust a face's landmarks, and a smooth fade of the swap with it.

A swap on unreliable landmarks is garbage: a face leaving the frame, turned
far away, or too small. ``swap_weight`` scores a face from 0 (do not swap)
to 1 (swap fully) on each of these, and ``Fade`` moves each followed face's
swap strength toward that score at a limited rate, so the swap fades out and
in over a fraction of a second rather than popping.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from appliance.vision.mesh import FACE_OVAL
from appliance.vision.neutral import face_height
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

# distance of the face outline from the frame edge, in face widths (negative: outside)
BORDER_FULL, BORDER_NONE = 0.05, -0.15
YAW_FULL, YAW_NONE = 45.0, 70.0  # degrees of head turn
HEIGHT_FULL, HEIGHT_NONE = 48.0, 24.0  # face height in pixels
FADE_PER_S = 6.0  # strength change per second at most (0 -> 1 in 1/6 s)


def ramp(value: float, none: float, full: float) -> float:
    """0 at ``none``, 1 at ``full``, linear between (either order)."""
    if full == none:
        return 1.0 if value >= full else 0.0
    return float(np.clip((value - none) / (full - none), 0.0, 1.0))


def border_margin(points: FloatArray, shape: tuple[int, ...]) -> float:
    """How far the face outline stays inside the image, in face widths (negative: cut off).

    Top and bottom count double: framings that cut the forehead close are common
    and harmless, while a face leaving sideways is the usual way out.
    """
    oval = points[list(FACE_OVAL), :2]
    lo, hi = oval.min(axis=0), oval.max(axis=0)
    width = max(float(hi[0] - lo[0]), 1.0)
    h, w = shape[:2]
    sideways = min(float(lo[0]), w - float(hi[0]))
    vertical = 2.0 * min(float(lo[1]), h - float(hi[1]))
    return min(sideways, vertical) / width


def yaw_degrees(rotation: np.ndarray) -> float:
    """Head turn about the vertical axis of a 3x3 rotation, in degrees (0: as enrolled)."""
    return abs(math.degrees(math.asin(float(np.clip(rotation[0, 2], -1.0, 1.0)))))


def swap_weight(points: FloatArray, shape: tuple[int, ...], yaw_deg: float) -> float:
    """0 to 1: how fully to swap this face, from the worst of its three scores."""
    height = face_height(points)
    return min(
        ramp(border_margin(points, shape), BORDER_NONE, BORDER_FULL),
        ramp(yaw_deg, YAW_NONE, YAW_FULL),
        ramp(height, HEIGHT_NONE, HEIGHT_FULL),
    )


class Fade:
    """One followed face's swap strength, following its weight at ``per_s`` at most
    (kept with the track, ``appliance.vision.face_state``).

    A new face starts at its weight (a still photo is swapped fully at once).
    """

    def __init__(self, per_s: float = FADE_PER_S) -> None:
        self.per_s = per_s
        self.strength: float | None = None  # None until the face's first swap
        self._stamp_ns = 0

    def update(self, weight: float, timestamp_ns: int) -> float:
        last = self.strength
        if last is None:
            strength = weight
        else:
            dt = max(0.0, (timestamp_ns - self._stamp_ns) / 1e9)
            step = self.per_s * max(dt, 1 / 240)
            strength = last + float(np.clip(weight - last, -step, step))
        self.strength = strength
        self._stamp_ns = timestamp_ns
        return strength
