"""Adaptive-quality decisions on simulated time: idle gate, quality ladder, degrade ladder.

A small discrete-event model stands in for the processing thread: frames
arrive every 1/fps s, each takes the cost of the current level, and a
processor that falls behind takes the newest frame as soon as it is free.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from appliance.errors import ConfigError
from appliance.pipeline.idle import IdleGate
from appliance.pipeline.ladder import NS, DegradeLadder, LadderTiming
from appliance.pipeline.quality import build_ladder

FPS = 30.0
PERIOD_NS = round(NS / FPS)


def simulate(
    ladder: DegradeLadder,
    cost_ms: Callable[[int], float],
    seconds: float,
    start_ns: int = 0,
    input_fps: float = FPS,
) -> tuple[int, list[int]]:
    """Run the model for ``seconds``; the end time and every level the ladder stepped to."""
    period = round(NS / input_fps)
    now, steps = start_ns, []
    end = start_ns + round(seconds * NS)
    while now < end:
        cost = cost_ms(ladder.level)
        done = now + round(cost * 1e6)
        ladder.sample(done, cost)
        step = ladder.evaluate(done, input_fps)
        if step is not None:
            steps.append(step.level)
            assert step.reason
        now = max(done, (now // period + 1) * period)
    return end, steps


def test_a_slow_stage_pushes_down_and_fast_again_climbs_back_without_oscillating() -> None:
    ladder = DegradeLadder(4, FPS)
    t, down = simulate(ladder, lambda level: 60.0, 60)
    assert down == [1, 2, 3]  # one level at a time, to the bottom
    t, up = simulate(ladder, lambda level: 10.0, 60, t)
    assert up == [2, 1, 0]
    _, later = simulate(ladder, lambda level: 10.0, 300, t)
    assert later == []


def test_a_level_too_slow_for_its_own_sake_is_tried_once_then_not_again() -> None:
    """Full quality costs 45 ms a frame, the next level 15 ms: one probe, then level 1."""
    ladder = DegradeLadder(3, FPS)
    t, steps = simulate(ladder, lambda level: 45.0 if level == 0 else 15.0, 600)
    assert steps == [1, 0, 1]
    _, steps = simulate(ladder, lambda level: 45.0 if level == 0 else 15.0, 1200, t)
    assert steps == []


def test_a_learned_cost_ratio_is_relearned_after_a_while() -> None:
    """Conditions change over months: after ``relearn_after_s`` the climb is tried again."""
    ladder = DegradeLadder(2, FPS, LadderTiming(relearn_after_s=600.0))
    t, steps = simulate(ladder, lambda level: 45.0 if level == 0 else 15.0, 300)
    assert steps == [1, 0, 1]
    _, steps = simulate(ladder, lambda level: 10.0 if level == 0 else 5.0, 900, t)
    assert steps == [0]  # full quality is cheap now, and holds


def test_a_failed_climb_is_learned_and_not_repeated() -> None:
    """A step whose saving hid under a passing load is retried once, then never again."""
    ladder = DegradeLadder(3, FPS)
    load = [50.0]
    t, steps = simulate(ladder, lambda level: load[0] + (40.0 if level == 0 else 0.0), 30)
    assert steps == [1, 2]
    load[0] = 5.0
    _, steps = simulate(ladder, lambda level: load[0] + (40.0 if level == 0 else 0.0), 600, t)
    assert steps[:3] == [1, 0, 1]  # climbed back, full quality (45 ms) failed
    assert steps[3:] == []  # and it stays at the level that holds the rate


def test_a_slow_camera_is_not_a_reason_to_degrade() -> None:
    ladder = DegradeLadder(3, FPS)
    _, steps = simulate(ladder, lambda level: 20.0, 60, input_fps=15.0)
    assert steps == []


def test_ladder_timing_is_checked() -> None:
    with pytest.raises(ConfigError):
        LadderTiming(window_s=5.0, degrade_after_s=1.0)
    with pytest.raises(ConfigError):
        DegradeLadder(0, FPS)


def test_quality_ladder_steps_follow_the_configuration_and_input() -> None:
    full_hd = build_ladder("poisson", 5, 1080)
    assert [level.name for level in full_hd] == [
        "full quality",
        "feathered blend",
        "detect every 10 frames",
        "light landmarks",
        "processing at 720p",
        "processing at 540p",
        "landmarks in turn",
    ]
    assert full_hd[-1].blend == "feather" and full_hd[-1].redetect_every == 10
    assert full_hd[-1].max_height == 540 and full_hd[-1].alternate_landmarks
    vga = build_ladder("feather", 5, 480)
    steps = [
        (q.redetect_every, q.light_landmarks, q.max_height, q.alternate_landmarks) for q in vga
    ]
    assert steps == [
        (5, False, None, False),
        (10, False, None, False),
        (10, True, None, False),
        (10, True, None, True),
    ]
    assert all(q.blend == "feather" for q in vga)
    heights = [q.max_height for q in build_ladder("feather", 3, 720)]
    assert heights == [None, None, None, 540, 540]
    # every face on the light landmarks already (one CPU): no step that changes nothing
    one_cpu = build_ladder("feather", 5, 720, light_landmarks=True)
    names = [
        "full quality",
        "detect every 10 frames",
        "processing at 540p",
        "landmarks in turn",
    ]
    assert [q.name for q in one_cpu] == names
    assert all(q.light_landmarks for q in one_cpu)


def test_idle_gate_halves_the_rate_and_wakes_within_two_frames() -> None:
    gate = IdleGate(idle_after_s=1.0, idle_fps=15.0)
    face_from = 90  # frames 0..89 (3 s) have nobody in view
    processed, modes = [], []
    for index in range(150):
        capture_ns = index * PERIOD_NS
        if not gate.admit(capture_ns):
            continue
        processed.append(index)
        change = gate.observe(capture_ns, faces=1 if index >= face_from else 0)
        if change:
            modes.append((index, gate.idle, change))
    assert modes[0][1] is True and 30 <= modes[0][0] <= 31  # idle after 1 s without a face
    idle_frames = [i for i in processed if 30 < i < face_from]
    assert all(b - a == 2 for a, b in itertools.pairwise(idle_frames))  # 15 of 30 fps
    woke = modes[1]
    assert woke[1] is False and woke[0] <= face_from + 1
    assert set(range(face_from + 2, 150)) <= set(processed)  # full rate again


def test_a_load_that_passes_just_as_quality_steps_down_does_not_keep_it_down() -> None:
    ladder = DegradeLadder(3, FPS)
    stepped = [False]

    def cost(level: int) -> float:
        stepped[0] = stepped[0] or level > 0
        return 8.0 if stepped[0] else 60.0

    _, steps = simulate(ladder, cost, 600)
    assert steps == [1, 0]
