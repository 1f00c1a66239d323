"""The processing thread: newest captured frame -> processor -> every sink's slot."""

from __future__ import annotations

import logging
import time

from appliance.media.frames import Frame, Image
from appliance.media.jpeg import decode_jpeg
from appliance.pipeline.sink_worker import SinkWorker
from appliance.pipeline.slots import LatestSlot
from appliance.pipeline.stage import Controller, Processor, StageContext, age_ms, next_frame
from appliance.pipeline.telemetry import Drop
from appliance.running import Lifecycle

logger = logging.getLogger(__name__)


class ProcessWorker:
    """Takes the newest captured frame, processes it and offers it to every sink.

    When ``processor.process`` raises, the frame goes on unswapped with its
    captured image (the processor draws into the image in place, so the image
    it leaves may be half swapped and unlabelled): decoded again from the
    camera's JPEG where the frame has one (``Frame.encoded``), else a copy
    taken beforehand (a 1280x720 frame's copy cost 0.2 ms of every frame's
    latency, the decode only the failed frame's); without ``keep_original``
    nothing is kept and the frame is dropped instead. While the processor
    backs off after repeated failures frames bypass it and go on untouched.

    A ``controller`` (adaptive quality) is asked whether to process each
    frame (idle mode drops some) and told how each processed frame went.
    """

    name = "process"

    def __init__(
        self,
        ctx: StageContext,
        processor: Processor,
        inp: LatestSlot[Frame],
        outs: list[SinkWorker],
        *,
        keep_original: bool = True,
        controller: Controller | None = None,
    ) -> None:
        self.ctx = ctx
        self.processor = processor
        self.controller = controller
        self.inp = inp
        self.outs = outs
        self.keep_original = keep_original
        self.resource: Lifecycle | None = None
        self._failures = ctx.failures("process")
        self._last_ns = -1

    def run(self) -> None:
        try:
            while (frame := next_frame(self.inp, self.ctx.stop)) is not None:
                self._handle(frame)
        finally:
            for out in self.outs:
                out.slot.close()

    def _handle(self, frame: Frame) -> None:
        telemetry = self.ctx.telemetry
        if self._stale(frame):
            return
        refused = None if self.controller is None else self.controller.refusal(frame)
        if refused is not None:
            telemetry.record_drop(refused)
            return
        telemetry.record_stage("queue", age_ms(frame))
        done = self._process(frame)
        if done is None or self._stale(done):
            return
        if done.capture_ns <= self._last_ns:
            telemetry.record_drop(Drop.OUT_OF_ORDER)
            return
        self._last_ns = done.capture_ns
        telemetry.record_output(age_ms(done), done.swapped)
        for out in self.outs:
            out.offer(done)

    def _stale(self, frame: Frame) -> bool:
        if age_ms(frame) <= self.ctx.budget_ms:
            return False
        self.ctx.telemetry.record_drop(Drop.STALE)
        return True

    def _process(self, frame: Frame) -> Frame | None:
        if self._failures.backing_off():
            self.ctx.telemetry.record_passthrough()
            return frame
        copy = self.keep_original and frame.encoded is None
        original = frame.image.copy() if copy else None
        start = time.perf_counter()
        try:
            done = self.processor.process(frame)
        except Exception as exc:
            self._failures.failed(exc)
            return self._unswapped(frame, original)
        self._failures.succeeded()
        process_ms = (time.perf_counter() - start) * 1e3
        done.timings_ms["process"] = process_ms
        self.ctx.telemetry.record_stages(done.timings_ms)
        self.ctx.telemetry.set_faces(done.faces)
        if self.controller is not None:
            self.controller.observe(done, process_ms)
        return done

    def _unswapped(self, frame: Frame, original: Image | None) -> Frame | None:
        """``frame`` restored to its captured image (``original``, or its JPEG decoded
        again); None (dropped) without either."""
        if original is None and self.keep_original and frame.encoded is not None:
            original = decode_jpeg(frame.encoded)
        if original is None:
            self.ctx.telemetry.record_drop(Drop.ERROR)
            return None
        frame.image = original
        frame.swapped = False
        frame.faces = 0
        self.ctx.telemetry.record_passthrough()
        return frame
