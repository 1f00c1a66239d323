"""Adaptive quality: idle mode and the degrade ladder, applied to the processor.

The processing thread asks ``refusal`` before it processes a frame (idle mode
drops some) and tells ``observe`` how each processed frame went. Every change
of mode or level is applied to the processor between frames, logged with its
reason, and shown in telemetry (``mode``, ``degrade_level``, transitions).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from appliance.config import PipelineSettings
from appliance.media.frames import Frame
from appliance.pipeline.idle import IdleGate
from appliance.pipeline.ladder import DegradeLadder, LadderTiming
from appliance.pipeline.presence import FACES, Presence
from appliance.pipeline.quality import QualityLevel, build_ladder
from appliance.pipeline.telemetry import Drop, Telemetry

logger = logging.getLogger(__name__)


class Tunable(Protocol):
    """A processor whose quality can be changed between frames."""

    @property
    def quality(self) -> QualityLevel: ...

    def set_quality(self, level: QualityLevel) -> None: ...


class AdaptiveController:
    """Idle gate plus degrade ladder for one pipeline run (used by its processing thread).

    ``settings.adaptive`` False keeps the configured quality (idle mode still
    applies). The ladder is built on the first frame, from the processor's
    configured quality and the frame height.
    """

    def __init__(
        self,
        processor: Tunable,
        telemetry: Telemetry,
        settings: PipelineSettings,
        *,
        timing: LadderTiming | None = None,
        clock_ns: Callable[[], int] = time.monotonic_ns,
        presence: Presence | None = None,
    ) -> None:
        self.processor = processor
        self.presence = presence or Presence()  # the idle gate reports faces into it
        self.telemetry = telemetry
        self.settings = settings
        self.idle = IdleGate(settings.idle_after_s, settings.idle_fps)
        self.levels: list[QualityLevel] = []
        self._timing = timing
        self._clock = clock_ns
        self._ladder: DegradeLadder | None = None
        self._cap_ns = 0  # the fps cap's frame period (0: no cap)
        self._capped_at: int | None = None
        self._cap_drop = Drop.THERMAL  # the reason the fps cap's drops are counted under

    @property
    def level(self) -> int:
        return 0 if self._ladder is None else self._ladder.level

    def refusal(self, frame: Frame) -> Drop | None:
        """Why ``frame`` is not to be processed (``Drop.IDLE``, or the fps cap's drop), or None."""
        if self._ladder is None:
            self._build(frame.image.shape[0])
        if not self.idle.admit(frame.capture_ns):
            return Drop.IDLE
        last = self._capped_at
        if self._cap_ns and last is not None and frame.capture_ns - last < self._cap_ns * 0.9:
            return self._cap_drop
        self._capped_at = frame.capture_ns
        return None

    def set_fps_cap(self, fps: float | None, reason: str = "", drop: Drop = Drop.THERMAL) -> None:
        """Process at most ``fps`` frames a second (None: no cap), e.g. while the device is warm.

        The ladder then aims at the cap, so the frames it drops are not taken for slowness.
        """
        cap_ns = 0 if fps is None or fps <= 0 else round(1e9 / fps)
        self._cap_drop = drop  # frames it drops count as ``drop`` (thermal, no_motion)
        if cap_ns == self._cap_ns:
            return
        self._cap_ns = cap_ns
        target = self.settings.target_fps if fps is None else min(self.settings.target_fps, fps)
        if self._ladder is not None:
            self._ladder.target_fps = target
            self._ladder.pause(self._clock())
        logger.info("fps cap %s (%s)", "off" if fps is None else f"{fps:g}", reason or "asked")

    def observe(self, frame: Frame, process_ms: float) -> None:
        """Record a processed frame; may change the mode or the quality level. The frame
        is marked ``idle`` while nobody is there (the presence signal: idle mode or the
        PIR's no motion; the display's idle screen)."""
        now = self._clock()
        change = self.idle.observe(frame.capture_ns, frame.faces)
        if change is not None:
            self.presence.report(FACES, not self.idle.idle, change)
            self.telemetry.set_mode("idle" if self.idle.idle else "normal", change)
            if self._ladder is not None:
                self._ladder.pause(now)
        # the final word, after this frame's faces: a face that ends idle mode is not idle
        frame.idle = self.presence.nobody
        if self._ladder is None or self.idle.idle or not self.settings.adaptive:
            return
        self._ladder.sample(now, process_ms)
        step = self._ladder.evaluate(now, self.telemetry.input_fps())
        if step is not None:
            level = self.levels[step.level]
            self.processor.set_quality(level)
            self.telemetry.set_degrade_level(step.level, step.reason, level.name)

    def _build(self, height: int) -> None:
        base = self.processor.quality
        self.levels = build_ladder(base.blend, base.redetect_every, height, base.light_landmarks)
        self._ladder = DegradeLadder(
            len(self.levels), self.settings.target_fps, self._timing, now_ns=self._clock()
        )
        logger.info("quality ladder: %s", " > ".join(level.name for level in self.levels))
