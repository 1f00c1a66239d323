"""Whose eyes show: the identity's while open, the visitor's own while they blink.

Per followed face and eye, 0 (the identity's eye) to 1 (the visitor's own):
the visitor's eye shows as it closes, so blinks and winks read as theirs.
How closed an eye is counts against that visitor's own open eye (their
usual aspect ratio, followed per face): a wide-eyed visitor's blink halves
the ratio long before it reaches the fixed ``EYE_OPEN``, and the tracked
landmarks, smoothed, see a fast blink only half-closed although the image
shows it shut. A closure that lasts (looking down, squinting) is no blink:
after ``HOLD_S`` the identity's eye fades back in over ``FADE_S``, so the
face stays the identity's.
"""

from __future__ import annotations

import logging
import math
from typing import Literal

import numpy as np

from appliance.vision.mesh import LEFT_EYE_EAR, RIGHT_EYE_EAR
from appliance.vision.shape_transfer import eye_aspect_ratio
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

EyesMode = Literal["identity", "blinks", "visitor"]
EYE_OPEN, EYE_SHUT = 0.15, 0.05  # eye aspect ratios: the identity's eye / the visitor's
# the same as shares of the visitor's own open eye: the hand-over starts below
# OPEN_SHARE of it and is complete at SHUT_SHARE
OPEN_SHARE, SHUT_SHARE = 0.8, 0.45
RISE_S, FALL_S = 0.1, 3.0  # the open eye follows a wider eye at once, a narrower one slowly
HOLD_S = 0.5  # a closure longer than this is not a blink
FADE_S = 0.3  # then the identity's eye comes back over this long
CLOSED = 0.5  # a closure is timed from when the visitor's share passes this until it is 0


def closing(ear: float) -> float:
    """0 for an open eye to 1 for a shut one, by its aspect ratio."""
    return float(np.clip((EYE_OPEN - ear) / (EYE_OPEN - EYE_SHUT), 0.0, 1.0))


def closing_share(ear: float, open_ear: float) -> float:
    """0 for an eye as open as ``open_ear`` (the visitor's usual) to 1 for one shut."""
    if open_ear <= 1e-6:
        return closing(ear)
    by_share = (OPEN_SHARE - ear / open_ear) / (OPEN_SHARE - SHUT_SHARE)
    return max(closing(ear), float(np.clip(by_share, 0.0, 1.0)))


def own_eyes_now(visitor: FloatArray, mode: EyesMode) -> tuple[float, float]:
    """(right, left): how much of each of the visitor's own eyes shows, by this frame alone."""
    if mode == "visitor":
        return 1.0, 1.0
    if mode == "identity":
        return 0.0, 0.0
    right, left = (closing(eye_aspect_ratio(visitor, r)) for r in (RIGHT_EYE_EAR, LEFT_EYE_EAR))
    return right, left


class EyeHandOver:
    """One followed face's hand-over (kept with the track, ``appliance.vision.face_state``)."""

    def __init__(self) -> None:
        self._closed_since: int | None = None
        self._open: list[float] | None = None  # (right, left): the visitor's usual open eye
        self._stamp_ns: int | None = None

    def own_eyes(self, visitor: FloatArray, stamp_ns: int, mode: EyesMode) -> tuple[float, float]:
        """(right, left): how much of each of the visitor's own eyes shows, a long closure
        giving way to the identity's eyes again."""
        if mode != "blinks":
            return own_eyes_now(visitor, mode)
        ears = [eye_aspect_ratio(visitor, ring) for ring in (RIGHT_EYE_EAR, LEFT_EYE_EAR)]
        usual = self._follow_open(ears, stamp_ns)
        right, left = (closing_share(ear, ref) for ear, ref in zip(ears, usual, strict=True))
        shut = max(right, left)
        if shut <= 0.0:  # open again: the next closure is timed afresh
            self._closed_since = None
        elif shut >= CLOSED and self._closed_since is None:
            self._closed_since = stamp_ns
        if self._closed_since is None:
            return right, left
        held_s = (stamp_ns - self._closed_since) / 1e9
        back = float(np.clip((held_s - HOLD_S) / FADE_S, 0.0, 1.0))
        return right * (1 - back), left * (1 - back)

    def _follow_open(self, ears: list[float], stamp_ns: int) -> list[float]:
        """The usual open eye (per eye) before this frame, then eased towards ``ears``."""
        if self._open is None or self._stamp_ns is None:
            self._open = list(ears)
        usual = list(self._open)
        dt_s = max(0.0, (stamp_ns - self._stamp_ns) / 1e9) if self._stamp_ns is not None else 0.0
        self._stamp_ns = stamp_ns
        for i, ear in enumerate(ears):
            rate = 1.0 - math.exp(-dt_s / (RISE_S if ear > usual[i] else FALL_S))
            self._open[i] = usual[i] + rate * (ear - usual[i])
        return usual
