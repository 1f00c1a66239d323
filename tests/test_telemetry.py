"""Telemetry: percentiles, rates, drops, errors, state, transitions, snapshots."""

from __future__ import annotations

import dataclasses
import json
import threading

import numpy as np
import pytest

from appliance.pipeline.meters import LatencyWindow, RateMeter, summarise
from appliance.pipeline.telemetry import Drop, Telemetry


class FakeClock:
    """A monotonic clock in ns that only moves when told."""

    def __init__(self) -> None:
        self.now_ns = 1_000_000_000

    def __call__(self) -> int:
        return self.now_ns

    def advance(self, seconds: float) -> None:
        self.now_ns += round(seconds * 1e9)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def telemetry(clock: FakeClock) -> Telemetry:
    return Telemetry(clock_ns=clock, wall_clock=lambda: 1_700_000_000.0)


def test_stage_percentiles_on_known_data(telemetry: Telemetry) -> None:
    values = [float(v) for v in range(1, 101)]
    rng = np.random.default_rng(0)
    for v in rng.permutation(values):
        telemetry.record_stage("detect", float(v))
    s = telemetry.snapshot().stages_ms["detect"]
    assert s.count == 100
    assert s.p50 == pytest.approx(50.5)
    assert s.p95 == pytest.approx(95.05)
    assert s.p99 == pytest.approx(99.01)
    assert s.mean == pytest.approx(50.5)
    assert s.max == 100.0


def test_percentiles_cover_only_the_last_window_of_samples() -> None:
    window = LatencyWindow(capacity=100)
    for v in range(1000):
        window.record(float(v))
    assert window.total == 1000
    assert sorted(window.values()) == [float(v) for v in range(900, 1000)]
    summary = summarise(window.values())
    assert summary.count == 100
    assert summary.p50 == pytest.approx(949.5)
    assert summary.max == 999.0


def test_record_stages_takes_a_frames_timings(telemetry: Telemetry) -> None:
    telemetry.record_stages({"detect": 4.0, "warp": 2.0})
    telemetry.record_stages({"detect": 6.0, "label": 0.5})
    stages = telemetry.snapshot().stages_ms
    assert sorted(stages) == ["detect", "label", "warp"]
    assert stages["detect"].count == 2
    assert stages["detect"].p50 == pytest.approx(5.0)


def test_empty_summary_is_none_not_nan(telemetry: Telemetry) -> None:
    snap = telemetry.snapshot()
    assert snap.e2e_ms.count == 0
    assert snap.e2e_ms.p50 is None
    assert snap.stages_ms == {}
    assert snap.input_fps == 0.0


def test_input_and_output_fps_over_a_sliding_window(telemetry: Telemetry, clock: FakeClock) -> None:
    for i in range(90):  # 3 s at 30 fps in, every third frame out
        telemetry.record_input()
        if i % 3 == 0:
            telemetry.record_output(e2e_ms=40.0)
        clock.advance(1 / 30)
    snap = telemetry.snapshot()
    assert snap.input_fps == pytest.approx(30.0, rel=0.05)
    assert snap.output_fps == pytest.approx(10.0, rel=0.1)
    assert snap.frames_in == 90
    assert snap.frames_out == 30
    assert snap.e2e_ms.p99 == pytest.approx(40.0)
    clock.advance(2.5)  # nothing for longer than the window
    assert telemetry.snapshot().input_fps == 0.0


def test_rate_before_a_full_window_is_over_the_time_so_far(clock: FakeClock) -> None:
    meter = RateMeter(clock(), window_s=2.0)
    for _ in range(10):
        clock.advance(0.05)
        meter.mark(clock())
    assert meter.rate(clock()) == pytest.approx(20.0)


def test_rate_meter_memory_is_bounded(clock: FakeClock) -> None:
    meter = RateMeter(clock(), window_s=2.0, capacity=100)
    for _ in range(1000):  # 1000 fps for 1 s
        clock.advance(0.001)
        meter.mark(clock())
    assert meter.rate(clock()) == pytest.approx(1000.0, rel=0.02)


def test_drops_by_reason_and_per_sink(telemetry: Telemetry) -> None:
    telemetry.add_sink("preview")
    for _ in range(3):
        telemetry.record_drop(Drop.SUPERSEDED)
    telemetry.record_drop(Drop.STALE)
    telemetry.record_drop(Drop.STALE, sink="preview")
    telemetry.record_drop(Drop.SINK_BUSY, sink="preview")
    snap = telemetry.snapshot()
    assert snap.drops == {"superseded": 3, "stale": 2, "sink_busy": 1}
    assert snap.dropped == 6
    assert snap.sinks["preview"].dropped == 2
    assert snap.sinks["preview"].written == 0


def test_sink_writes(telemetry: Telemetry, clock: FakeClock) -> None:
    for _ in range(20):
        telemetry.record_sink_write("file", e2e_ms=50.0, write_ms=3.0)
        clock.advance(0.1)
    snap = telemetry.snapshot()
    sink = snap.sinks["file"]
    assert sink.written == 20
    assert sink.fps == pytest.approx(10.0, rel=0.1)
    assert sink.e2e_ms.p50 == pytest.approx(50.0)
    assert snap.stages_ms["sink:file"].p50 == pytest.approx(3.0)


def test_errors_by_stage_and_kind(telemetry: Telemetry) -> None:
    telemetry.record_error("process", ValueError("bad"))
    telemetry.record_error("process", ValueError("worse"))
    telemetry.record_error("process", KeyError("k"))
    telemetry.record_error("sink:preview", "OutputError")
    snap = telemetry.snapshot()
    assert snap.errors == {
        "process": {"ValueError": 2, "KeyError": 1},
        "sink:preview": {"OutputError": 1},
    }
    assert snap.error_count() == 4
    assert snap.error_count("process") == 3
    assert snap.error_count("capture") == 0


def test_mode_and_degrade_transitions_are_logged_once_per_change(
    telemetry: Telemetry,
) -> None:
    telemetry.set_mode("idle", "no face for 30 s")
    telemetry.set_mode("idle", "still no face")  # no change, no event
    telemetry.set_degrade_level(2, "p95 over budget")
    telemetry.set_faces(1)
    telemetry.set_mode("normal", "face seen")
    snap = telemetry.snapshot()
    assert snap.mode == "normal"
    assert snap.degrade_level == 2
    assert snap.faces == 1
    events = [(t.subject, t.from_state, t.to_state, t.reason) for t in snap.transitions]
    assert events == [
        ("mode", "normal", "idle", "no face for 30 s"),
        ("degrade", "0", "2", "p95 over budget"),
        ("mode", "idle", "normal", "face seen"),
    ]
    assert all(t.at_unix == 1_700_000_000.0 for t in snap.transitions)


def test_transition_log_keeps_the_last_n(clock: FakeClock) -> None:
    telemetry = Telemetry(max_transitions=3, clock_ns=clock)
    for level in range(1, 6):
        telemetry.set_degrade_level(level, f"step {level}")
    reasons = [t.reason for t in telemetry.snapshot().transitions]
    assert reasons == ["step 3", "step 4", "step 5"]


def test_camera_gaps_count_and_seconds(telemetry: Telemetry, clock: FakeClock) -> None:
    telemetry.camera_ok()  # connected already: nothing happens
    clock.advance(1.0)
    telemetry.camera_lost("unplugged")
    telemetry.camera_lost("still unplugged")  # same gap
    clock.advance(2.5)
    telemetry.camera_ok()
    clock.advance(1.0)
    telemetry.camera_lost("no frame for 1 s")
    clock.advance(1.0)
    cam = telemetry.snapshot().camera
    assert not cam.connected
    assert cam.gaps == 2
    assert cam.gap_s == pytest.approx(3.5)  # 2.5 s closed + 1 s still open
    subjects = [(t.subject, t.to_state) for t in telemetry.snapshot().transitions]
    assert subjects == [
        ("camera", "disconnected"),
        ("camera", "connected"),
        ("camera", "disconnected"),
    ]


def test_running_state(telemetry: Telemetry) -> None:
    assert not telemetry.snapshot().running
    telemetry.set_running(True, "started")
    assert telemetry.snapshot().running
    telemetry.set_running(False, "end of source")
    last = telemetry.snapshot().transitions[-1]
    assert (last.subject, last.to_state, last.reason) == ("runner", "stopped", "end of source")


def test_snapshot_is_frozen_and_json_serialisable(telemetry: Telemetry) -> None:
    empty = json.loads(json.dumps(telemetry.snapshot().as_dict(), allow_nan=False))
    assert empty["e2e_ms"]["p50"] is None
    telemetry.add_sink("preview")
    telemetry.record_input()
    telemetry.record_output(12.5)
    telemetry.record_stage("detect", 3.0)
    telemetry.record_drop(Drop.STALE)
    telemetry.record_error("process", RuntimeError("x"))
    telemetry.record_sink_write("preview", 20.0, 1.0)
    telemetry.set_mode("idle", "quiet")
    telemetry.camera_lost("gone")
    snap = telemetry.snapshot()
    data = json.loads(json.dumps(snap.as_dict(), allow_nan=False))
    assert data["e2e_ms"]["p50"] == 12.5
    assert data["stages_ms"]["detect"]["count"] == 1
    assert data["drops"] == {"stale": 1}
    assert data["errors"] == {"process": {"RuntimeError": 1}}
    assert data["sinks"]["preview"]["written"] == 1
    assert data["camera"]["connected"] is False
    assert data["transitions"][0]["to_state"] == "idle"
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.mode = "x"  # type: ignore[misc]


def test_counts_are_exact_under_concurrent_writers() -> None:
    telemetry = Telemetry(window_samples=64)
    per_thread, threads = 2000, 4

    def hammer() -> None:
        for i in range(per_thread):
            telemetry.record_input()
            telemetry.record_drop(Drop.SUPERSEDED)
            telemetry.record_stage("process", float(i % 50))
            telemetry.record_error("process", "ValueError")

    workers = [threading.Thread(target=hammer) for _ in range(threads)]
    for w in workers:
        w.start()
    readings = [telemetry.snapshot() for _ in range(20)]  # reading while writing
    for w in workers:
        w.join()
    snap = telemetry.snapshot()
    total = per_thread * threads
    assert snap.frames_in == total
    assert snap.drops["superseded"] == total
    assert snap.errors["process"]["ValueError"] == total
    assert snap.stages_ms["process"].count == 64  # bounded window
    assert all(r.frames_in <= total for r in readings)
