"""PipelineRunner: ordered, bounded, latest-wins, stoppable, failure-tolerant.

Sources are the real DemoSource or small FrameSource subclasses that behave
like awkward hardware; processors are small stand-ins (slow, flaky, broken)
plus one run of the real processor. Timing bounds are generous on purpose:
nothing asserts an absolute speed.
"""

from __future__ import annotations

import gc
import itertools
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import cv2
import numpy as np
import pytest

from appliance.config import Settings
from appliance.errors import OutputError, SourceError
from appliance.media.demo_source import DemoSource
from appliance.media.frames import Frame
from appliance.media.null_sink import NullSink
from appliance.media.sink_base import FrameSink
from appliance.media.source_base import FrameSource, FrameTimeoutError
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_processor
from appliance.pipeline.failures import StageFailures
from appliance.pipeline.runner import THREAD_PREFIX, PipelineRunner, sink_names
from appliance.pipeline.telemetry import Telemetry

BUDGET_MS = 200.0
HANDOFF_SLACK_MS = 25.0  # thread-switch time between the runner's age check and write()
MARK = np.array([1, 2, 3], np.uint8)  # what the stand-in processors "swap" into a frame
SMALL = (320, 240)


# ---- stand-ins ------------------------------------------------------------------------------


@dataclass
class Written:
    index: int
    capture_ns: int
    age_ms: float
    swapped: bool
    marked: bool


class RecordingSink(FrameSink):
    """Records every frame it gets (from its own thread); can be slow or fail."""

    def __init__(self, delay_s: float = 0.0, fail_every: int = 0) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.fail_every = fail_every
        self.calls = 0
        self.records: list[Written] = []

    def _write(self, frame: Frame) -> None:
        age = (time.monotonic_ns() - frame.capture_ns) / 1e6
        self.calls += 1
        if self.fail_every and self.calls % self.fail_every == 0:
            raise OutputError("disk full")
        marked = bool((frame.image[:4, :4] == MARK).all())
        self.records.append(Written(frame.index, frame.capture_ns, age, frame.swapped, marked))
        if self.delay_s:
            time.sleep(self.delay_s)


def mark(frame: Frame) -> None:
    frame.image[:4, :4] = MARK


class MarkingProcessor:
    """Draws the mark into the image in place (like a swap), sleeping per a schedule."""

    def __init__(self, delays_s: tuple[float, ...] = (0.0,)) -> None:
        self.delays = itertools.cycle(delays_s)
        self.calls = 0

    def process(self, frame: Frame) -> Frame:
        self.calls += 1
        time.sleep(next(self.delays))
        mark(frame)
        frame.swapped = True
        frame.faces = 1
        frame.timings_ms["warp"] = 1.0
        return frame


class FlakyProcessor(MarkingProcessor):
    """Raises on every ``every``-th call, after drawing into the image."""

    def __init__(self, every: int = 10) -> None:
        super().__init__()
        self.every = every
        self.failed: set[int] = set()

    def process(self, frame: Frame) -> Frame:
        if (self.calls + 1) % self.every == 0:
            self.calls += 1
            mark(frame)  # half-done work that must never be shown
            self.failed.add(frame.index)
            raise ValueError(f"landmarks diverged on frame {frame.index}")
        return super().process(frame)


class ReplayProcessor(MarkingProcessor):
    """Every ``every``-th call hands back the previous frame again (older capture time)."""

    def __init__(self, every: int = 5) -> None:
        super().__init__()
        self.every = every
        self.previous: Frame | None = None
        self.replays = 0

    def process(self, frame: Frame) -> Frame:
        done = super().process(frame)
        if self.previous is not None and self.calls % self.every == 0:
            self.replays += 1
            return self.previous
        self.previous = done
        return done


class BrokenProcessor:
    def __init__(self) -> None:
        self.calls = 0

    def process(self, frame: Frame) -> Frame:
        self.calls += 1
        raise RuntimeError("model file corrupt")


class StuckCamera(FrameSource):
    """A camera whose driver ignores the read timeout: read blocks until closed."""

    def __init__(self) -> None:
        super().__init__(size=SMALL, fps=30.0)
        self._released = threading.Event()
        self.reads = 0

    def _on_start(self) -> None:
        self._released.clear()

    def _on_stop(self) -> None:
        self._released.set()

    def _read(self, timeout_s: float | None) -> Frame | None:
        self.reads += 1
        if self.reads > 3:
            self._released.wait(30.0)
            return None
        return self._make_frame(np.zeros((SMALL[1], SMALL[0], 3), np.uint8))


class LaggyCamera(FrameSource):
    """Every ``every``-th frame is handed over ``lag_s`` after it was captured."""

    def __init__(self, frames: int, lag_s: float = 0.3, every: int = 4) -> None:
        super().__init__(size=SMALL, fps=30.0)
        self.frames, self.lag_s, self.every = frames, lag_s, every

    def _read(self, timeout_s: float | None) -> Frame | None:
        if self._next_index >= self.frames:
            return None
        frame = self._make_frame(np.full((SMALL[1], SMALL[0], 3), 90, np.uint8))
        time.sleep(self.lag_s if frame.index % self.every == 0 else 0.01)
        return frame


class UnpluggedCamera(FrameSource):
    """Frames, then ``SourceError`` for ``outage_s`` (unplugged), then frames again."""

    def __init__(self, frames: int, fail_after: int = 10, outage_s: float = 0.6) -> None:
        super().__init__(size=SMALL, fps=50.0)
        self.frames, self.fail_after, self.outage_s = frames, fail_after, outage_s
        self._outage_end = 0.0

    def _read(self, timeout_s: float | None) -> Frame | None:
        if self._next_index >= self.frames:
            return None
        if self._next_index == self.fail_after and not self._outage_end:
            self._outage_end = time.monotonic() + self.outage_s
        if time.monotonic() < self._outage_end:
            raise SourceError("camera /dev/video0 stopped delivering frames (unplugged?)")
        time.sleep(0.02)
        return self._make_frame(np.zeros((SMALL[1], SMALL[0], 3), np.uint8))


class SilentCamera(FrameSource):
    """Delivers no frame, honouring the read timeout (a covered or dead sensor)."""

    def __init__(self) -> None:
        super().__init__(size=SMALL, fps=30.0)

    def _read(self, timeout_s: float | None) -> Frame | None:
        time.sleep(timeout_s or 0.1)
        raise FrameTimeoutError(f"no frame within {timeout_s} s")


class BrokenCamera(FrameSource):
    def __init__(self) -> None:
        super().__init__(size=SMALL, fps=30.0)

    def _on_start(self) -> None:
        raise SourceError("camera /dev/video9 not found (is it plugged in?)")


# ---- helpers -------------------------------------------------------------------------------


def pipeline_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]


@pytest.fixture(autouse=True)
def no_threads_left() -> Iterator[None]:
    yield
    deadline = time.monotonic() + 3.0
    while pipeline_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pipeline_threads() == []


def demo(
    image: np.ndarray,
    *,
    size: tuple[int, int] = SMALL,
    paced: bool = False,
    fps: float = 30.0,
    frames: int | None = None,
) -> DemoSource:
    return DemoSource(image, size=size, paced=paced, fps=fps, frames=frames)


def assert_in_capture_order(sink: RecordingSink) -> None:
    stamps = [r.capture_ns for r in sink.records]
    assert all(b > a for a, b in itertools.pairwise(stamps)), "frames out of capture order"


def assert_none_stale(sink: RecordingSink, budget_ms: float = BUDGET_MS) -> None:
    worst = max((r.age_ms for r in sink.records), default=0.0)
    assert worst <= budget_ms + HANDOFF_SLACK_MS, f"a frame {worst:.0f} ms old was shown"


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class RssSampler:
    """The peak RSS over a run, sampled every few ms from a side thread."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="test-rss", daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss_bytes())


# ---- order, flow, end of stream ------------------------------------------------------------


def test_every_sink_gets_frames_in_capture_order(astronaut: np.ndarray) -> None:
    a, b = RecordingSink(), RecordingSink()
    telemetry = Telemetry()
    runner = PipelineRunner(demo(astronaut, frames=120), MarkingProcessor(), [a, b], telemetry)
    snap = runner.run_for(timeout_s=20.0)
    assert runner.end_reason == "end of source"
    assert snap.frames_in == 120
    assert not snap.running
    for sink in (a, b):
        assert sink.records, "no frame reached the sink"
        assert_in_capture_order(sink)
        assert all(r.swapped and r.marked for r in sink.records)
        assert sink.closed
    assert snap.frames_out >= max(len(a.records), len(b.records))
    assert set(snap.sinks) == {"RecordingSink", "RecordingSink-2"}
    assert snap.sinks["RecordingSink"].written == len(a.records)
    assert snap.stages_ms["process"].count >= 1
    assert snap.stages_ms["warp"].p50 == pytest.approx(1.0)
    assert snap.faces == 1
    assert snap.transitions[-1].reason == "end of source"


def test_frames_out_of_capture_order_are_dropped(astronaut: np.ndarray) -> None:
    processor = ReplayProcessor(every=5)
    sink = RecordingSink()
    runner = PipelineRunner(demo(astronaut, frames=100), processor, [sink], Telemetry(), 1000.0)
    snap = runner.run_for(timeout_s=20.0)
    assert processor.replays >= 2
    assert snap.drops["out_of_order"] == processor.replays
    assert_in_capture_order(sink)


def test_frame_limit_ends_the_run(astronaut: np.ndarray) -> None:
    sink = NullSink()
    runner = PipelineRunner(demo(astronaut), MarkingProcessor(), [sink], Telemetry())
    snap = runner.run_for(frames=50, timeout_s=20.0)
    assert snap.frames_in == 50
    assert runner.end_reason == "frame limit 50 reached"
    assert 1 <= sink.frames_written <= 50


def test_bounded_under_a_slow_stage_with_a_fast_source(astronaut: np.ndarray) -> None:
    """1,000 unpaced frames into a 50-250 ms processor: no pile-up, nothing stale shown."""
    sink = RecordingSink()
    telemetry = Telemetry()
    source = DemoSource(astronaut, size=(640, 480), paced=False)
    runner = PipelineRunner(
        source, MarkingProcessor((0.05, 0.1, 0.07, 0.25)), [sink], telemetry, BUDGET_MS
    )
    runner.start()
    try:
        deadline = time.monotonic() + 20.0
        while telemetry.snapshot().frames_in < 100 and time.monotonic() < deadline:
            time.sleep(0.01)
        baseline = rss_bytes()
        with RssSampler() as rss:
            while telemetry.snapshot().frames_in < 1000 and time.monotonic() < deadline:
                time.sleep(0.02)
                assert all(len(slot) <= slot.capacity for slot in runner.slots.values())
    finally:
        assert runner.stop()
    snap = telemetry.snapshot()
    assert snap.frames_in >= 1000
    growth_mb = (rss.peak - baseline) / 2**20
    assert growth_mb < 64, f"RSS grew {growth_mb:.0f} MB: frames are piling up"
    assert all(slot.high_water <= slot.capacity for slot in runner.slots.values())
    assert snap.drops["superseded"] >= snap.frames_in // 2
    assert snap.drops["stale"] >= 1  # the 250 ms frames were over budget at hand-off
    assert snap.frames_out < snap.frames_in // 2
    assert sink.records
    assert_in_capture_order(sink)
    assert_none_stale(sink)
    assert snap.e2e_ms.max is not None and snap.e2e_ms.max <= BUDGET_MS
    assert snap.sinks["RecordingSink"].e2e_ms.max is not None
    assert snap.sinks["RecordingSink"].e2e_ms.max <= BUDGET_MS


def test_stale_frames_are_dropped_and_counted_never_shown() -> None:
    """Late frames from the camera and overlong processing both go stale."""
    sink = RecordingSink()
    telemetry = Telemetry()
    processor = MarkingProcessor((0.0, 0.0, 0.25))  # every third frame: over budget
    runner = PipelineRunner(LaggyCamera(frames=24), processor, [sink], telemetry, BUDGET_MS)
    snap = runner.run_for(timeout_s=20.0)
    assert snap.drops.get("stale", 0) >= 5
    assert sink.records
    assert_none_stale(sink)
    assert_in_capture_order(sink)
    assert snap.frames_out + snap.drops.get("stale", 0) <= snap.frames_in


# ---- stopping ------------------------------------------------------------------------------


def test_stop_returns_quickly_while_the_source_read_blocks() -> None:
    camera = StuckCamera()
    sink = RecordingSink()
    runner = PipelineRunner(camera, MarkingProcessor(), [sink], Telemetry())
    runner.start()
    deadline = time.monotonic() + 5.0
    while camera.reads <= 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # now inside the blocking read
    start = time.monotonic()
    assert runner.stop(timeout_s=2.0)
    assert time.monotonic() - start < 2.0
    assert pipeline_threads() == []
    assert camera.closed and sink.closed
    assert runner.end_reason == "stop requested"


def test_stop_during_a_paced_live_run_releases_everything(astronaut: np.ndarray) -> None:
    source = demo(astronaut, paced=True, fps=30.0)
    sinks = [RecordingSink(), RecordingSink(delay_s=0.2)]
    telemetry = Telemetry()
    with PipelineRunner(source, MarkingProcessor((0.03,)), sinks, telemetry) as runner:
        time.sleep(0.5)
        assert runner.running
        assert telemetry.snapshot().running
        start = time.monotonic()
    assert time.monotonic() - start < 2.0
    assert not runner.running
    assert pipeline_threads() == []
    assert source.closed and all(s.closed for s in sinks)
    assert not telemetry.snapshot().running


def test_a_source_that_cannot_start_closes_the_sinks() -> None:
    sink = RecordingSink()
    runner = PipelineRunner(BrokenCamera(), MarkingProcessor(), [sink], Telemetry())
    with pytest.raises(SourceError, match="not found"):
        runner.start()
    assert sink.closed
    assert pipeline_threads() == []
    with pytest.raises(RuntimeError, match="runs once"):
        runner.start()


def test_a_runner_runs_once(astronaut: np.ndarray) -> None:
    runner = PipelineRunner(
        demo(astronaut, frames=5), MarkingProcessor(), [NullSink()], Telemetry()
    )
    runner.run_for(timeout_s=10.0)
    with pytest.raises(RuntimeError, match="runs once"):
        runner.start()
    assert runner.stop()  # idempotent


# ---- failures ------------------------------------------------------------------------------


def test_a_stage_raising_every_tenth_frame_does_not_stop_the_pipeline(
    astronaut: np.ndarray, caplog: pytest.LogCaptureFixture
) -> None:
    processor = FlakyProcessor(every=10)
    sink = RecordingSink()
    telemetry = Telemetry()
    runner = PipelineRunner(demo(astronaut, frames=400), processor, [sink], telemetry, 1000.0)
    with caplog.at_level(logging.ERROR, logger="appliance.pipeline"):
        snap = runner.run_for(timeout_s=20.0)
    assert runner.end_reason == "end of source"
    failures = len(processor.failed)
    assert failures >= 3
    assert snap.errors["process"] == {"ValueError": failures}
    assert snap.passthrough == failures
    logged = [r for r in caplog.records if "ValueError" in r.getMessage()]
    assert len(logged) == 1, "logged once per exception kind, then only counted"
    # the failed frames went on with their captured image: unswapped, no half-done work
    shown_failed = [r for r in sink.records if r.index in processor.failed]
    assert shown_failed
    assert all(not r.swapped and not r.marked for r in shown_failed)
    ok = [r for r in sink.records if r.index not in processor.failed]
    assert all(r.swapped and r.marked for r in ok)
    assert max(r.index for r in ok) > min(processor.failed)  # kept going after a failure
    assert_in_capture_order(sink)


class MjpgCamera(FrameSource):
    """An MJPG camera's frames: each image decoded from a real JPEG it keeps. The
    decoded image here is black and the JPEG grey, so which one a frame was
    restored from shows."""

    GREY = 200

    def __init__(self, frames: int) -> None:
        super().__init__(size=SMALL, fps=100.0)
        self.frames = frames
        grey = np.full((SMALL[1], SMALL[0], 3), self.GREY, np.uint8)
        self.jpeg = cv2.imencode(".jpg", grey)[1].tobytes()

    def _read(self, timeout_s: float | None) -> Frame | None:
        if self._next_index >= self.frames:
            return None
        time.sleep(0.01)
        return self._make_frame(np.zeros((SMALL[1], SMALL[0], 3), np.uint8), self.jpeg)


def test_a_failed_frame_from_a_jpeg_camera_is_decoded_again_not_copied() -> None:
    processor = FlakyProcessor(every=5)
    sink = GreySink()
    runner = PipelineRunner(MjpgCamera(frames=40), processor, [sink], Telemetry(), 1000.0)
    snap = runner.run_for(timeout_s=20.0)
    assert snap.passthrough == len(processor.failed) >= 3
    failed = [r for r in sink.records if r.index in processor.failed]
    assert failed and all(not r.swapped and not r.marked for r in failed)
    # restored from the camera's JPEG (grey), not from a copy of the decoded image
    assert all(abs(sink.grey[r.index] - MjpgCamera.GREY) <= 2 for r in failed)
    assert all(sink.grey[r.index] < 100 for r in sink.records if r.index not in processor.failed)


class GreySink(RecordingSink):
    """Also records each frame's mean level (away from the mark)."""

    def __init__(self) -> None:
        super().__init__()
        self.grey: dict[int, float] = {}

    def _write(self, frame: Frame) -> None:
        self.grey[frame.index] = float(frame.image[8:, 8:].mean())
        super()._write(frame)


def test_without_a_copy_a_failed_frame_is_dropped(astronaut: np.ndarray) -> None:
    processor = FlakyProcessor(every=10)
    sink = RecordingSink()
    runner = PipelineRunner(
        demo(astronaut, frames=200), processor, [sink], Telemetry(), 1000.0, keep_original=False
    )
    snap = runner.run_for(timeout_s=20.0)
    assert snap.drops["error"] == len(processor.failed) >= 1
    assert not any(r.index in processor.failed for r in sink.records)
    assert all(r.swapped for r in sink.records)


def test_a_broken_stage_backs_off_and_frames_flow_unswapped(astronaut: np.ndarray) -> None:
    processor = BrokenProcessor()
    sink = RecordingSink()
    telemetry = Telemetry()
    with PipelineRunner(demo(astronaut, paced=True, fps=30.0), processor, [sink], telemetry):
        time.sleep(1.5)
    # no back-off would be ~45 calls at 30 fps; doubling pauses allow about ten
    assert processor.calls <= 20
    assert len(sink.records) > processor.calls
    assert all(not r.swapped for r in sink.records)
    snap = telemetry.snapshot()
    assert snap.errors["process"]["RuntimeError"] == processor.calls
    assert snap.passthrough >= len(sink.records)


def test_a_failing_sink_is_counted_and_keeps_writing(astronaut: np.ndarray) -> None:
    sink = RecordingSink(fail_every=5)
    telemetry = Telemetry()
    source = demo(astronaut, paced=True, fps=100.0, frames=60)
    runner = PipelineRunner(source, MarkingProcessor(), [sink], telemetry)
    snap = runner.run_for(timeout_s=20.0)
    failures = sink.calls // 5
    assert failures >= 3
    assert snap.errors["sink:RecordingSink"] == {"OutputError": failures}
    assert snap.drops["error"] == failures
    assert len(sink.records) == sink.calls - failures
    assert snap.sinks["RecordingSink"].written == len(sink.records)


def test_an_unplugged_camera_is_a_counted_gap_and_the_run_goes_on() -> None:
    sink = RecordingSink()
    telemetry = Telemetry()
    camera = UnpluggedCamera(frames=40, fail_after=10, outage_s=0.6)
    runner = PipelineRunner(camera, MarkingProcessor(), [sink], telemetry)
    snap = runner.run_for(timeout_s=20.0)
    assert snap.frames_in == 40
    assert snap.camera.connected
    assert snap.camera.gaps == 1
    assert 0.3 <= snap.camera.gap_s <= 3.0
    assert snap.errors["capture"]["SourceError"] >= 2
    assert max(r.index for r in sink.records) > 10  # frames again after the outage
    changes = [t.to_state for t in snap.transitions if t.subject == "camera"]
    assert changes == ["disconnected", "connected"]


def test_a_silent_camera_shows_as_disconnected() -> None:
    telemetry = Telemetry()
    with PipelineRunner(
        SilentCamera(), MarkingProcessor(), [NullSink()], telemetry, gap_after_s=0.3
    ):
        time.sleep(0.8)
        cam = telemetry.snapshot().camera
    assert not cam.connected
    assert cam.gaps == 1
    assert cam.gap_s > 0.1


def test_stage_failures_back_off_exponentially_up_to_a_cap() -> None:
    now = [0.0]
    failures = StageFailures("process", Telemetry(), max_pause_s=1.0, clock=lambda: now[0])
    pauses = [failures.failed(ValueError("x")) for _ in range(10)]
    assert pauses == [0.0, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.0, 1.0]
    assert failures.backing_off()
    now[0] += 1.01
    assert not failures.backing_off()
    failures.failed(ValueError("x"))
    failures.succeeded()
    assert failures.consecutive == 0 and failures.pause_s() == 0.0
    assert not failures.backing_off()


# ---- sinks ---------------------------------------------------------------------------------


def test_a_slow_sink_does_not_hold_up_a_fast_one(astronaut: np.ndarray) -> None:
    fast, slow = RecordingSink(), RecordingSink(delay_s=0.2)
    telemetry = Telemetry()
    source = demo(astronaut, paced=True, fps=30.0, frames=60)
    runner = PipelineRunner(source, MarkingProcessor(), [fast, slow], telemetry)
    snap = runner.run_for(timeout_s=20.0)
    assert snap.frames_out >= 30
    assert len(fast.records) >= 0.8 * snap.frames_out
    assert len(slow.records) <= 0.5 * len(fast.records)
    slow_name = runner.sink_names[1]
    assert snap.sinks[slow_name].dropped >= 10
    assert snap.drops["sink_busy"] >= 10
    for sink in (fast, slow):
        assert_in_capture_order(sink)
        assert_none_stale(sink)


def test_sink_names_are_unique() -> None:
    sinks: list[FrameSink] = [NullSink(), RecordingSink(), NullSink()]
    assert sink_names(sinks) == ["NullSink", "RecordingSink", "NullSink-2"]


# ---- the real processor --------------------------------------------------------------------


def test_real_processor_on_the_demo_source(astronaut: np.ndarray, store: ModelStore) -> None:
    processor = build_processor(Settings(), store, "grace_hopper")
    sink, recorder = NullSink(), RecordingSink()
    telemetry = Telemetry()
    source = demo(astronaut, size=(640, 480), paced=True, fps=30.0, frames=60)
    runner = PipelineRunner(source, processor, [sink, recorder], telemetry)
    snap = runner.run_for(timeout_s=30.0)
    assert snap.frames_in == 60
    assert snap.error_count() == 0
    assert sink.frames_written >= 20
    assert any(r.swapped for r in recorder.records)
    assert "landmarks" in snap.stages_ms
    assert json.loads(json.dumps(snap.as_dict(), allow_nan=False))["frames_in"] == 60
    assert snap.stages_ms["process"].p50 is not None
    assert_in_capture_order(recorder)
    assert_none_stale(recorder)


def test_what_lives_at_start_is_kept_out_of_later_collections(astronaut: np.ndarray) -> None:
    """Everything alive when the pipeline starts (models, settings, modules) is frozen out
    of the cyclic collector's walks: a full collection then sees only the frames' own
    objects (one took 34 ms with them in)."""
    gc.unfreeze()
    runner = PipelineRunner(
        demo(astronaut, frames=10), MarkingProcessor(), [NullSink()], Telemetry()
    )
    runner.run_for(timeout_s=20.0)
    assert gc.get_freeze_count() > 10_000  # pytest, numpy, the appliance's modules
