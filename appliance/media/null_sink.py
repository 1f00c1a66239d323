"""A sink that drops every frame and only counts them (for benchmarks and tests)."""

from __future__ import annotations

import logging

from appliance.media.frames import Frame
from appliance.media.sink_base import FrameSink

logger = logging.getLogger(__name__)


class NullSink(FrameSink):
    """Counts frames in ``frames_written`` and keeps the index of the last one."""

    def __init__(self) -> None:
        super().__init__()
        self.last_index: int | None = None

    def __repr__(self) -> str:
        return f"NullSink(frames_written={self.frames_written})"

    def _write(self, frame: Frame) -> None:
        self.last_index = frame.index
