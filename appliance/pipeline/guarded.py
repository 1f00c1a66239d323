"""The frame processor behind a lock, so the admin UI changes it only between frames."""

from __future__ import annotations

import logging
import threading

from appliance.media.frames import Frame
from appliance.pipeline.processor import FrameProcessor
from appliance.pipeline.quality import QualityLevel

logger = logging.getLogger(__name__)


class GuardedProcessor:
    """``process`` holds ``lock``; whoever else holds it sees the processor between frames.

    Give this (not the bare processor) to the ``PipelineRunner`` and the
    ``AdaptiveController``: it is a ``Processor`` and a ``Tunable``.
    """

    def __init__(self, inner: FrameProcessor, lock: threading.RLock | None = None) -> None:
        self.inner = inner
        self.lock = lock or threading.RLock()

    def process(self, frame: Frame) -> Frame:
        with self.lock:
            return self.inner.process(frame)

    @property
    def quality(self) -> QualityLevel:
        with self.lock:
            return self.inner.quality

    def set_quality(self, level: QualityLevel) -> None:
        with self.lock:
            self.inner.set_quality(level)

    def reset(self) -> None:
        """Forget the tracks (the thermal gate calls it when swapping resumes)."""
        with self.lock:
            self.inner.reset()
