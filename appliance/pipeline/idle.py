"""Idle mode: with nobody in view, process fewer frames; back at once when a face shows.

Decisions use the frames' capture times, so a clip replays the same way at
any speed. After ``idle_after_s`` of capture time without a face the gate
admits frames at most ``idle_fps`` a second (the others are dropped, not shown
unswapped); the first frame with a face ends idle mode, so with a camera at
twice the idle rate a face is processed by its second frame at the latest.
"""

from __future__ import annotations

import logging

from appliance.errors import ConfigError

logger = logging.getLogger(__name__)

ADMIT_SLACK = 0.9  # admit a frame a little early rather than skip it for jitter


class IdleGate:
    """Decides which frames to process; ``observe`` reports each processed frame's faces."""

    def __init__(self, idle_after_s: float = 5.0, idle_fps: float = 15.0) -> None:
        if not idle_after_s > 0:
            raise ConfigError(f"idle_after_s must be > 0, got {idle_after_s}")
        if not idle_fps > 0:
            raise ConfigError(f"idle_fps must be > 0, got {idle_fps}")
        self.idle_after_ns = round(idle_after_s * 1e9)
        self.period_ns = round(1e9 / idle_fps)
        self.idle = False
        self._last_face_ns: int | None = None
        self._last_admitted_ns: int | None = None

    def admit(self, capture_ns: int) -> bool:
        """Whether to process the frame captured at ``capture_ns``."""
        last = self._last_admitted_ns
        if self.idle and last is not None and capture_ns - last < self.period_ns * ADMIT_SLACK:
            return False
        self._last_admitted_ns = capture_ns
        return True

    def observe(self, capture_ns: int, faces: int) -> str | None:
        """Record a processed frame; the reason when idle mode starts or ends, else None."""
        if faces > 0:
            self._last_face_ns = capture_ns
            if self.idle:
                self.idle = False
                return "a face appeared"
            return None
        if self._last_face_ns is None:
            self._last_face_ns = capture_ns  # the clock starts with the first frame
        if not self.idle and capture_ns - self._last_face_ns >= self.idle_after_ns:
            self.idle = True
            return f"no face for {self.idle_after_ns / 1e9:g} s"
        return None
