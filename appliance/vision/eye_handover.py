"""Whose eyes show: the identity's while open, the visitor's own while they blink.

Per followed face and eye, 0 (the identity's eye) to 1 (the visitor's own):
the visitor's eye shows as it closes, so blinks and winks read as theirs.
A closure that lasts (looking down, squinting) is no blink: after
``HOLD_S`` the identity's eye fades back in over ``FADE_S``, so the face
stays the identity's.
"""

from __future__ import annotations

import logging
from typing import Literal

import numpy as np

from appliance.vision.mesh import LEFT_EYE_EAR, RIGHT_EYE_EAR
from appliance.vision.shape_transfer import eye_aspect_ratio
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

EyesMode = Literal["identity", "blinks", "visitor"]
EYE_OPEN, EYE_SHUT = 0.15, 0.05  # eye aspect ratios: the identity's eye / the visitor's
HOLD_S = 0.5  # a closure longer than this is not a blink
FADE_S = 0.3  # then the identity's eye comes back over this long
CLOSED = 0.5  # "closing" once the visitor's share passes this


def closing(ear: float) -> float:
    """0 for an open eye to 1 for a shut one, by its aspect ratio."""
    return float(np.clip((EYE_OPEN - ear) / (EYE_OPEN - EYE_SHUT), 0.0, 1.0))


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

    def own_eyes(self, visitor: FloatArray, stamp_ns: int, mode: EyesMode) -> tuple[float, float]:
        """(right, left): how much of each of the visitor's own eyes shows, a long closure
        giving way to the identity's eyes again."""
        right, left = own_eyes_now(visitor, mode)
        if mode != "blinks" or max(right, left) < CLOSED:
            self._closed_since = None
            return right, left
        if self._closed_since is None:
            self._closed_since = stamp_ns
        held_s = (stamp_ns - self._closed_since) / 1e9
        back = float(np.clip((held_s - HOLD_S) / FADE_S, 0.0, 1.0))
        return right * (1 - back), left * (1 - back)
