"""The thermal governor on temperature traces, its actions on the pipeline, and its thread.

Traces are replayed through ``ReplaySensor`` on an injected clock, so a
ten-minute warm-up takes no time and every timing is exact. The thresholds
are the rpi5-cpu profile's: warm 65, hot 75, critical 82 C, 5 C hysteresis,
30 s hold.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from appliance.config import Settings, updated
from appliance.device.catalog import load_profiles
from appliance.errors import ConfigError
from appliance.media.frames import Frame
from appliance.pipeline.chain import ProcessingChain
from appliance.pipeline.quality import QualityLevel, build_ladder
from appliance.pipeline.telemetry import Telemetry
from appliance.thermal.action import COOLING_NOTICE, ThermalAction, action_for
from appliance.thermal.governor import (
    GovernorConfig,
    ThermalState,
    ThermalStateMachine,
    assess,
)
from appliance.thermal.replay import ReplaySensor, TracePoint
from appliance.thermal.runner import ThermalGovernor, governor_for
from appliance.thermal.sensors import Reading, ThermalSensor
from tests.waiting import wait_for

DATA = Path(__file__).parent / "data" / "thermal"
N, W, H, C = ThermalState.NORMAL, ThermalState.WARM, ThermalState.HOT, ThermalState.CRITICAL
PI5 = GovernorConfig(warm_c=65, hot_c=75, critical_c=82, hysteresis_c=5, hold_s=30)


class Clock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


Change = tuple[float, ThermalState, ThermalState, float | None]


def run_trace(
    trace: Sequence[TracePoint] | Path,
    until_s: float,
    step_s: float = 5.0,
    config: GovernorConfig = PI5,
) -> tuple[list[Change], ThermalStateMachine]:
    """Poll a replayed trace every ``step_s``; the state changes (time, from, to, temperature)."""
    clock = Clock()
    if isinstance(trace, Path):
        sensor = ReplaySensor.from_csv(trace, clock)
    else:
        sensor = ReplaySensor(trace, clock)
    machine = ThermalStateMachine(config)
    changes: list[Change] = []
    for tick in range(int(until_s / step_s) + 1):
        clock.now = tick * step_s
        decision = machine.update(clock.now, sensor.read())
        if decision.changed:
            changes.append((clock.now, decision.previous, decision.state, decision.temperature_c))
    return changes, machine


def trace(*points: tuple[float, float | None]) -> list[TracePoint]:
    return [TracePoint(t, c) for t, c in points]


def ok(path: str, celsius: float) -> Reading:
    return Reading(path, path, "ok", celsius)


# ---- the state machine on traces ------------------------------------------------------------


def test_slow_ramp_visits_every_state_in_order_and_back() -> None:
    changes, machine = run_trace(DATA / "ramp.csv", until_s=1200)
    assert [(a, b) for _, a, b, _ in changes] == [(N, W), (W, H), (H, C), (C, H), (H, W), (W, N)]
    up = changes[:3]
    for (_, _, state, temperature), threshold in zip(up, (65, 75, 82), strict=True):
        assert temperature is not None and threshold <= temperature < threshold + 2.1, state
    down = changes[3:]
    for _, before, _, temperature in down:
        assert temperature is not None and temperature < PI5.release(before)
    times = [t for t, *_ in down]
    assert all(later - earlier >= PI5.hold_s for earlier, later in itertools.pairwise(times))
    assert machine.state == N


def test_oscillation_around_a_threshold_does_not_flap() -> None:
    wobble = trace(*((5.0 * i, 64.0 if i % 2 else 66.0) for i in range(240)))  # 20 minutes
    changes, _ = run_trace(wobble, until_s=1200)
    assert [(a, b) for _, a, b, _ in changes] == [(N, W)]


def test_dipping_below_release_for_less_than_the_hold_does_not_step_down() -> None:
    # WARM at 66, then 58 C (below 60) for 20 s out of every 40 s: never 30 s in a row.
    points = [(0.0, 66.0)] + [
        (10.0 + 40 * i + d, c) for i in range(30) for d, c in ((0, 58.0), (20, 61.0))
    ]
    changes, machine = run_trace(trace(*points), until_s=1200)
    assert [(a, b) for _, a, b, _ in changes] == [(N, W)]
    assert machine.state == W


def test_a_spike_goes_straight_up_and_steps_down_one_hold_at_a_time() -> None:
    changes, machine = run_trace(trace((0, 50.0), (100, 95.0), (105, 50.0)), until_s=400)
    assert changes[0] == (100.0, N, C, 95.0)
    assert [(t, a, b) for t, a, b, _ in changes[1:]] == [
        (135.0, C, H),
        (165.0, H, W),
        (195.0, W, N),
    ]
    assert machine.state == N


def test_cooling_back_to_normal_only_after_the_hold_time() -> None:
    changes, _ = run_trace(trace((0, 66.0), (100, 59.9)), until_s=200, step_s=1.0)
    assert [(t, a, b) for t, a, b, _ in changes] == [(0.0, N, W), (130.0, W, N)]
    changes, _ = run_trace(trace((0, 66.0), (100, 60.0)), until_s=400, step_s=1.0)
    assert [(a, b) for _, a, b, _ in changes] == [(N, W)]  # 60.0 is not below 65 - 5


def test_sensor_dropout_assumes_hot_then_cools_down_after_holds() -> None:
    clock = Clock()
    sensor = ReplaySensor.from_csv(DATA / "dropout.csv", clock)
    machine = ThermalStateMachine(PI5)
    seen = {}
    for second in range(0, 301, 5):
        clock.now = float(second)
        seen[second] = machine.update(clock.now, sensor.read())
    assert seen[55].state == N and not seen[55].alert
    assert seen[60].state == H and seen[60].changed and seen[60].temperature_c is None
    assert "sensor failure, assuming hot" in seen[60].reason and "replay" in seen[60].alert
    assert seen[85].state == H and seen[85].alert and not seen[85].changed
    assert seen[90].state == H and not seen[90].alert  # read again, but not yet cool for long
    assert seen[115].state == H
    assert seen[120].state == W and "below 70 C for 30 s" in seen[120].reason
    assert seen[145].state == W and seen[150].state == N


def test_sensor_failure_keeps_a_hotter_state_and_never_steps_down_blind() -> None:
    machine = ThermalStateMachine(PI5)
    machine.update(0, [ok("a", 90.0)])
    assert machine.state == C
    blind = Reading("a", "a", "unreadable", None, "EIO")
    for second in range(5, 300, 5):
        assert machine.update(second, [blind]).state == C
    cool_but_failing = [ok("a", 40.0), Reading("b", "b", "unreadable", None, "EIO")]
    states = [machine.update(300 + s, cool_but_failing).state for s in range(0, 300, 5)]
    assert states[-1] == H and C in states  # down to the conservative state, no further


# ---- what the readings say --------------------------------------------------------------------


def test_the_hottest_readable_sensor_decides() -> None:
    seen = assess([ok("cpu", 61.0), ok("gpu", 68.5), Reading("cv0", "cv0", "offline")])
    assert (seen.temperature_c, seen.hottest, seen.failure) == (68.5, "gpu", "")


def test_missing_and_offline_are_failures_only_when_nothing_reads() -> None:
    assert not assess([ok("cpu", 50.0), Reading("apex", "apex", "missing")]).failure
    nothing = [Reading("zone", "zone", "missing", None, "no file")]
    assert "no sensor gives a temperature: zone (missing)" in assess(nothing).failure
    assert assess(nothing, required=False) == assess([], required=False)
    assert not assess([], required=False).failure
    assert "none configured" in assess([]).failure


def test_unrequired_sensors_absent_run_unmonitored_at_normal() -> None:
    machine = ThermalStateMachine(
        GovernorConfig(warm_c=80, hot_c=90, critical_c=98, required=False)
    )
    decision = machine.update(0.0, [Reading("zones", "zones", "missing")])
    assert (decision.state, decision.alert) == (N, "")


def test_bad_config_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="thresholds must rise"):
        GovernorConfig(warm_c=80, hot_c=70, critical_c=90)


# ---- actions on the pipeline settings and the ladder -------------------------------------------


BASE = updated(
    Settings(),
    {
        "swap": {"blend": "poisson", "swapper": "inswapper_128"},
        "detector": {"model": "full"},
        "pipeline": {"target_fps": 30, "redetect_every": 5},
    },
)


def _knobs(settings: Settings) -> tuple[float, int, str, str, str]:
    return (
        settings.pipeline.target_fps,
        settings.pipeline.redetect_every,
        settings.swap.blend,
        settings.swap.swapper,
        settings.detector.model,
    )


def test_each_action_applied_to_the_pipeline_settings() -> None:
    assert action_for(N, BASE).apply(BASE) == BASE
    assert _knobs(action_for(W, BASE).apply(BASE)) == (22.5, 10, "feather", "inswapper_128", "full")
    hot = action_for(H, BASE)
    assert _knobs(hot.apply(BASE)) == (15.0, 15, "feather", "geometric", "short")
    assert (hot.max_height, hot.swapping) == (480, True)
    critical = action_for(C, BASE)
    assert _knobs(critical.apply(BASE)) == (15.0, 15, "feather", "geometric", "short")
    assert (critical.swapping, critical.notice) == (False, COOLING_NOTICE)
    assert "swapping stopped" in critical.describe()


def test_actions_only_limit_never_raise_quality() -> None:
    frugal = updated(BASE, {"pipeline": {"target_fps": 8, "redetect_every": 40}})
    applied = action_for(W, BASE).apply(frugal)  # limits from BASE, on leaner settings
    assert (applied.pipeline.target_fps, applied.pipeline.redetect_every) == (8, 40)
    top = updated(BASE, {"pipeline": {"redetect_every": 50}})
    assert action_for(H, top).redetect_min == 60  # within the settings' own range


def test_the_ladder_still_works_above_the_thermal_limit() -> None:
    ladder = build_ladder("poisson", 5, 1080)
    hot = action_for(H, BASE)
    limited = [hot.limit(level) for level in ladder]
    assert all(level.blend == "feather" and level.max_height == 480 for level in limited)
    assert [level.redetect_every for level in limited] == [15] * 7
    warm = action_for(W, BASE)
    warm_levels = [warm.limit(level) for level in ladder]
    assert [lv.max_height for lv in warm_levels] == [None, None, None, None, 720, 540, 540]
    assert warm.limit(ladder[-1]).redetect_every == 10
    assert action_for(N, BASE).limit(ladder[0]) is ladder[0]


# ---- the gate between the governor and the processor --------------------------------------------


class FakeProcessor:
    """Records what the gate asks of it; ``process`` marks the frame swapped."""

    def __init__(self) -> None:
        self.quality = QualityLevel("poisson", 5)
        self.levels: list[QualityLevel] = []
        self.processed = 0
        self.resets = 0

    def set_quality(self, level: QualityLevel) -> None:
        self.quality = level
        self.levels.append(level)

    def process(self, frame: Frame) -> Frame:
        self.processed += 1
        frame.swapped = True
        frame.faces = 1
        return frame

    def reset(self) -> None:
        self.resets += 1


def _frame(index: int = 0) -> Frame:
    return Frame(np.full((720, 1280, 3), 200, np.uint8), index, index * 33_000_000)


def test_gate_applies_actions_between_frames_and_keeps_the_ladder_level() -> None:
    processor = FakeProcessor()
    gate = ProcessingChain(processor)
    asked = QualityLevel("poisson", 10, None, "detect every 10 frames")
    gate.set_quality(asked)
    assert processor.quality == asked and gate.quality == asked
    gate.set_action(action_for(H, BASE))
    assert processor.quality == asked  # not before the next frame
    assert gate.process(_frame()).swapped
    assert (processor.quality.blend, processor.quality.max_height) == ("feather", 480)
    assert processor.quality.redetect_every == 15 and gate.quality == asked
    gate.set_action(action_for(N, BASE))
    gate.process(_frame(1))
    assert processor.quality == asked


def test_gate_in_critical_stops_swapping_shows_the_notice_and_resets_after() -> None:
    processor = FakeProcessor()
    gate = ProcessingChain(processor)
    gate.set_action(action_for(C, BASE))
    frame = gate.process(_frame())
    assert processor.processed == 0 and not frame.swapped and frame.faces == 0
    assert frame.image.max() == 255 and frame.image.min() < 100  # dimmed, with white text
    gate.set_action(action_for(H, BASE))
    assert gate.process(_frame(1)).swapped and processor.resets == 1


# ---- the runner: sensors -> decision -> action, fan and telemetry --------------------------------


def test_governor_rounds_act_report_and_log_temperatures() -> None:
    clock = Clock()
    sensor = ReplaySensor(trace((0, 50.0), (10, 70.0), (20, 90.0), (30, None), (40, 50.0)), clock)
    telemetry = Telemetry(wall_clock=lambda: 0.0)
    actions: list[ThermalAction] = []
    governor = ThermalGovernor(
        [sensor], PI5, BASE, telemetry=telemetry, on_action=actions.append, clock=clock
    )
    for second in (0, 10, 20, 30, 40):
        clock.now = float(second)
        governor.poll()
    assert [a.state for a in actions] == [W, C]
    assert governor.action.state == C
    snap = telemetry.snapshot()
    assert (snap.thermal.state, snap.thermal.temperature_c, snap.thermal.alert) == (
        "critical",
        50.0,
        "",
    )
    moves = [(t.subject, t.from_state, t.to_state, t.reason) for t in snap.transitions]
    assert moves[0] == ("thermal", "unknown", "normal", "50.0 C")
    assert moves[1] == ("thermal", "normal", "warm", "70.0 C reached warm (65 C)")
    assert moves[2] == ("thermal", "warm", "critical", "90.0 C reached critical (82 C)")
    assert moves[3][:3] == ("thermal_sensors", "ok", "failed") and "replay" in moves[3][3]
    assert moves[4] == ("thermal_sensors", "failed", "ok", "sensors read again")
    json.dumps(snap.as_dict(), allow_nan=False)


def test_governor_thread_polls_until_stopped_and_closes_its_sensors() -> None:
    closed: list[str] = []

    class Steady:
        name = "steady"

        def read(self) -> list[Reading]:
            return [ok("steady", 77.0)]

        def close(self) -> None:
            closed.append(self.name)

    sensors: list[ThermalSensor] = [Steady()]
    telemetry = Telemetry()
    with ThermalGovernor(sensors, PI5, BASE, telemetry=telemetry, poll_s=0.01) as governor:
        assert wait_for(lambda: telemetry.snapshot().thermal.state == "hot")
        assert governor.state == H
    assert closed == ["steady"]


def test_governor_for_a_profile_reads_its_zones(tmp_path: Path) -> None:
    zone = tmp_path / "sys/class/thermal/thermal_zone0"
    zone.mkdir(parents=True)
    (zone / "temp").write_text("67000\n", encoding="ascii")
    profile = load_profiles()["rpi5-cpu"]
    governor = governor_for(profile, BASE, root=tmp_path)
    try:
        assert governor.fan is None  # no fan pin on this profile
        decision = governor.poll()
        assert (decision.state, decision.temperature_c) == (W, 67.0)
        assert governor.poll_s == profile.thermal.poll_s
    finally:
        governor.stop()
