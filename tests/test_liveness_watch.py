"""LIVE is not forever: a track that jumps onto a photo, or whose eyes stay perfectly still,
is UNVERIFIED again; a real head moving about stays LIVE.

Synthetic first (the astronaut's real landmarks moved in known ways), then on
../shared/media (skipped when absent): a photo raised over a real visitor's
face after their blink is refused within a second of covering it (the old
gate kept it LIVE: sticky), and the real videos re-shot far, noisy, moving
and at 15 fps turn LIVE within half a second of their first blink.
"""

from __future__ import annotations

import numpy as np
import pytest

from appliance.tools.bench_liveness import (
    SLIDE_DEADLINE_S,
    SLIDE_STYLES,
    read_video,
    run_slide,
    run_variant,
)
from appliance.tools.real_variants import variant
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.liveness import LivenessGate
from appliance.vision.liveness_watch import IRISES, STILL_S, iris_offsets
from tests.conftest import shared_media
from tests.test_liveness import SIZE, blink_sequence, jitter, ns

FPS = 30


def live_gate(face: np.ndarray) -> tuple[LivenessGate, int]:
    """A gate whose track 1 blinked (LIVE), and the next frame index."""
    gate = LivenessGate("either")
    frames = list(blink_sequence(face, 3))
    for i, points in enumerate(frames):
        gate.update({1: points}, SIZE, ns(i))
    assert gate.is_live(1)
    return gate, len(frames)


def moved(points: np.ndarray, scale: float, dx: float, dy: float) -> np.ndarray:
    out = points.copy()
    centre = points[:, :2].mean(axis=0)
    out[:, :2] = centre + (points[:, :2] - centre) * scale + np.array([dx, dy])
    return out


def look(points: np.ndarray, gaze: float) -> np.ndarray:
    """``points`` with both irises moved along their eye by ``gaze`` eye widths."""
    out = points.copy()
    for iris, a, b in IRISES:
        axis = points[b, :2] - points[a, :2]
        out[iris : iris + 5, :2] += gaze * axis
    return out


def test_iris_offsets_follow_the_gaze(face: np.ndarray) -> None:
    before = iris_offsets(face)
    after = iris_offsets(look(face, 0.1))
    assert after[0] - before[0] == pytest.approx(0.1, abs=1e-3)
    assert after[1] - before[1] == pytest.approx(0.1, abs=1e-3)


def test_a_track_that_jumps_onto_a_larger_face_is_live_no_more(face: np.ndarray) -> None:
    """The photo raised over the face: the track snaps onto a face 30 % larger."""
    gate, start = live_gate(face)
    gate.update({1: moved(face, 1.3, 0.0, 20.0)}, SIZE, ns(start))
    assert not gate.is_live(1)
    assert gate.counts().unverified == 1


def test_a_track_that_jumps_sideways_is_live_no_more(face: np.ndarray) -> None:
    gate, start = live_gate(face)
    eyes = float(np.linalg.norm(face[263, :2] - face[33, :2]))
    gate.update({1: moved(face, 1.0, 0.6 * eyes, 0.0)}, SIZE, ns(start))
    assert not gate.is_live(1)


def test_eyes_perfectly_still_for_long_are_live_no_more(face: np.ndarray) -> None:
    gate, start = live_gate(face)
    rng = np.random.default_rng(4)
    frames = round((STILL_S + 0.5) * FPS)
    states = []
    for i in range(frames):
        gate.update({1: jitter(face, rng, 0.15)}, SIZE, ns(start + i))
        states.append(gate.is_live(1))
    assert not states[-1], "a photo's eyes never move"
    # LIVE came 1 s before the end of the blink sequence: still eyes count from there
    assert all(states[: round((STILL_S - 1.0) * FPS) - 3]), "but not before STILL_S"


def test_a_real_head_moving_about_with_moving_eyes_stays_live(face: np.ndarray) -> None:
    """Walking closer (2 % a frame), swaying (5 px a frame), glancing about: still LIVE."""
    gate, start = live_gate(face)
    rng = np.random.default_rng(5)
    for i in range(10 * FPS):
        sway = 100.0 * np.sin(i / 20.0)  # at most 5 px a frame
        scale = 1.0 + 0.02 * min(i, 15)
        gaze = 0.08 * np.sin(i / 7.0)
        points = jitter(look(moved(face, scale, sway, 0.0), gaze), rng)
        gate.update({1: points}, SIZE, ns(start + i))
        assert gate.is_live(1), f"frame {i}"


# ---- on ../shared/media -----------------------------------------------------------------------


@pytest.mark.media
@pytest.mark.parametrize("style", SLIDE_STYLES, ids=[s[0] for s in SLIDE_STYLES])
def test_a_photo_slid_over_a_live_face_is_refused_within_a_second(
    analyzer: FaceAnalyzer,
    style: tuple[str, float, bool],
) -> None:
    frames, fps = read_video(shared_media("talking_man_greenscreen.mp4"))
    photo = shared_media("attack_photo_in_hand.jpg")
    result = run_slide(
        "talking_man",
        frames,
        fps,
        photo=photo,
        start_s=3.2,
        style=style,
        analyzer=analyzer,
        mode="either",
        seed=0,
    )
    assert result.live_s is not None and result.live_s < 3.2, "LIVE after the real blink"
    late = result.refused_after_s
    assert late is None or late <= SLIDE_DEADLINE_S, f"LIVE {late:.2f} s after covering"
    assert not result.error


@pytest.mark.media
@pytest.mark.parametrize("name", ["far", "hard", "15fps", "moving"])
def test_a_real_visitor_re_shot_turns_live_just_after_the_blink(
    analyzer: FaceAnalyzer,
    name: str,
) -> None:
    frames, fps = read_video(shared_media("talking_man_greenscreen.mp4"))
    result = run_variant(
        "talking_man", frames, fps, chosen=variant(name), analyzer=analyzer, mode="either"
    )
    assert result.first_blink_s is not None
    late = result.time_to_live_s
    assert late is not None and late <= 0.5, f"{name}: LIVE {late} s after the first blink"
