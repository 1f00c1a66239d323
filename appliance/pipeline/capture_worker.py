"""The capture thread: reads the source into a latest-wins slot.

Reads wait at most ``read_timeout_s`` so a stop is seen promptly. A timeout
just loops (after ``gap_after_s`` without frames the camera counts as
disconnected); any other read failure is counted, marks the camera
disconnected and backs off; the next frame ends the gap. End of stream
(``read()`` returns None), the frame limit or stop end the loop.

``on_camera`` hears each change, from this thread: ``False`` when the camera is
lost, ``True`` when its frames come back (before the first of them is handed
on), so a camera-lost screen is shown and hidden by the event, not polled.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from appliance.errors import MirrorError
from appliance.media.frames import Frame
from appliance.media.source_base import FrameSource, FrameTimeoutError
from appliance.pipeline.slots import LatestSlot
from appliance.pipeline.stage import StageContext, close_quietly
from appliance.pipeline.telemetry import Drop
from appliance.running import Lifecycle

logger = logging.getLogger(__name__)


class CaptureWorker:
    """Reads the source into ``out`` until the end, the frame limit or stop."""

    name = "capture"

    def __init__(
        self,
        ctx: StageContext,
        source: FrameSource,
        *,
        read_timeout_s: float = 0.1,
        gap_after_s: float = 1.0,
        frame_limit: int | None = None,
        capacity: int = 1,
        on_camera: Callable[[bool], None] | None = None,
    ) -> None:
        self.ctx = ctx
        self.source = source
        self.resource: Lifecycle = source
        self.out: LatestSlot[Frame] = LatestSlot(capacity)
        self.read_timeout_s = read_timeout_s
        self.gap_after_s = gap_after_s
        self.frame_limit = frame_limit
        self.end_reason = ""
        self.on_camera = on_camera
        self._failures = ctx.failures("capture")
        self._last_frame_at = time.monotonic()

    def run(self) -> None:
        self._last_frame_at = time.monotonic()
        try:
            self._loop()
        finally:
            self.out.close()
            close_quietly(self.source, "source")

    def _loop(self) -> None:
        count = 0
        while (frame := self._next_frame()) is not None:
            self.ctx.telemetry.record_input()
            dropped = self.out.put(frame)
            if dropped is not None and dropped is not frame:
                self.ctx.telemetry.record_drop(Drop.SUPERSEDED)
            count += 1
            if self.frame_limit is not None and count >= self.frame_limit:
                self.end_reason = f"frame limit {self.frame_limit} reached"
                return

    def _next_frame(self) -> Frame | None:
        while not self.ctx.stop.is_set():
            try:
                frame = self.source.read(self.read_timeout_s)
            except FrameTimeoutError:
                self._no_frame()
                continue
            except Exception as exc:
                if not self.ctx.stop.is_set():
                    self._read_failed(exc)
                continue
            if frame is None:
                self.end_reason = "end of source"
                return None
            self._got_frame()
            return frame
        self.end_reason = "stop requested"
        return None

    def _got_frame(self) -> None:
        self._last_frame_at = time.monotonic()
        self._failures.succeeded()
        if self.ctx.telemetry.camera_ok():
            self._tell(True)

    def _no_frame(self) -> None:
        if time.monotonic() - self._last_frame_at <= self.gap_after_s:
            return
        if self.ctx.telemetry.camera_lost(f"no frame for {self.gap_after_s:g} s"):
            self._tell(False)

    def _read_failed(self, exc: Exception) -> None:
        pause = self._failures.failed(exc)
        expected = isinstance(exc, MirrorError)  # says itself what is wrong (camera not found)
        reason = str(exc) if expected else f"{type(exc).__name__}: {exc}"
        if self.ctx.telemetry.camera_lost(reason):
            self._tell(False)
        self.ctx.stop.wait(pause)

    def _tell(self, connected: bool) -> None:
        if self.on_camera is None:
            return
        try:
            self.on_camera(connected)
        except MirrorError as exc:  # a screen that cannot show must not stop the capture
            logger.warning("camera %s listener failed: %s", "back" if connected else "lost", exc)
