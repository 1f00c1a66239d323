"""A sink thread: feeds one sink from its own latest-wins slot, in capture order.

A slow or failing sink holds up nobody: the processing thread only swaps
the frame in the slot (an unwritten older frame is dropped as sink_busy).
"""

from __future__ import annotations

import logging
import time

from appliance.media.frames import Frame
from appliance.media.sink_base import FrameSink
from appliance.pipeline.slots import LatestSlot
from appliance.pipeline.stage import StageContext, age_ms, close_quietly, next_frame
from appliance.pipeline.telemetry import Drop
from appliance.running import Lifecycle

logger = logging.getLogger(__name__)


class SinkWorker:
    """Feeds one sink from its own latest-wins slot, in capture order."""

    def __init__(self, ctx: StageContext, name: str, sink: FrameSink, capacity: int = 1) -> None:
        self.ctx = ctx
        self.name = name
        self.sink = sink
        self.resource: Lifecycle = sink
        self.slot: LatestSlot[Frame] = LatestSlot(capacity)
        self._failures = ctx.failures(f"sink:{name}")
        self._last_ns = -1

    def offer(self, frame: Frame) -> None:
        """Hand ``frame`` on without waiting; an unwritten older frame is dropped."""
        dropped = self.slot.put(frame)
        if dropped is not None and dropped is not frame:
            self.ctx.telemetry.record_drop(Drop.SINK_BUSY, sink=self.name)

    def run(self) -> None:
        try:
            while (frame := next_frame(self.slot, self.ctx.stop)) is not None:
                self._deliver(frame)
        finally:
            close_quietly(self.sink, "sink")

    def _deliver(self, frame: Frame) -> None:
        age = age_ms(frame)
        if age > self.ctx.budget_ms:
            self.ctx.telemetry.record_drop(Drop.STALE, sink=self.name)
            return
        if frame.capture_ns <= self._last_ns:
            self.ctx.telemetry.record_drop(Drop.OUT_OF_ORDER, sink=self.name)
            return
        self._last_ns = frame.capture_ns
        start = time.perf_counter()
        try:
            self.sink.write(frame)
        except Exception as exc:
            self.ctx.telemetry.record_drop(Drop.ERROR, sink=self.name)
            self.ctx.stop.wait(self._failures.failed(exc))
            return
        self._failures.succeeded()
        write_ms = (time.perf_counter() - start) * 1e3
        self.ctx.telemetry.record_sink_write(self.name, age, write_ms)
