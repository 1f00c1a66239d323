"""Faces at the border, turned away or tiny: no crash, no garbage, a smooth fade.

The clip slides the astronaut photo out of the frame to the left, so the
face crosses the border; the processor must swap it while it is inside,
fade the swap out as it leaves (never more than one fade step a frame), and
never change pixels outside the face and label.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from appliance.config import Settings
from appliance.media.frames import Frame
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_processor
from appliance.pipeline.processor import FrameProcessor
from appliance.vision.reliability import FADE_PER_S, Fade, swap_weight
from appliance.vision.shape_transfer import head_pose

FRAME_NS = 33_333_333
SIZE = (640, 480)


@pytest.fixture(scope="module")
def processor(store: ModelStore) -> FrameProcessor:
    return build_processor(Settings(), store, "grace_hopper")


def slide(image: np.ndarray, dx: int) -> np.ndarray:
    """``image`` on a grey canvas, shifted ``dx`` pixels right (negative: left, off frame)."""
    canvas = np.full((SIZE[1], SIZE[0], 3), 100, np.uint8)
    image = image[: SIZE[1] - 40]
    h, w = image.shape[:2]
    x0, y0 = dx, (SIZE[1] - h) // 2
    src_x0, dst_x0 = max(0, -x0), max(0, x0)
    width = min(w - src_x0, SIZE[0] - dst_x0)
    if width > 0:
        canvas[y0 : y0 + h, dst_x0 : dst_x0 + width] = image[:, src_x0 : src_x0 + width]
    return canvas


def test_a_face_leaving_the_frame_fades_out_without_errors(
    processor: FrameProcessor, astronaut: np.ndarray
) -> None:
    processor.reset()
    strengths, swapped = [], []
    for i, dx in enumerate(range(40, -330, -10)):
        frame = processor.process(Frame(slide(astronaut, dx), i, i * FRAME_NS))
        tracks = processor.tracks
        strengths.append((tracks[0].state.fade.strength or 0.0) if tracks else 0.0)
        swapped.append(frame.swapped)
        assert frame.image.shape == (SIZE[1], SIZE[0], 3)
    assert swapped[0] and strengths[0] == 1.0  # fully inside: a full swap
    assert not swapped[-1]  # gone
    step = FADE_PER_S * FRAME_NS / 1e9 + 1e-6
    assert all(abs(b - a) <= step for a, b in itertools.pairwise(strengths) if b > 0)
    fading = [s for s in strengths if 0 < s < 1]
    assert len(fading) >= 3, [round(s, 2) for s in strengths]  # faded over several frames


def test_half_a_face_at_the_border_is_swapped_weakly_or_not_at_all(
    processor: FrameProcessor, astronaut: np.ndarray
) -> None:
    processor.reset()
    image = slide(astronaut, -200)  # about half the face is off the left edge
    frame = processor.process(Frame(image.copy(), 0, 0))
    if frame.swapped:
        (track,) = processor.tracks
        strength = track.state.fade.strength
        assert strength is not None and strength < 0.5
    outside = np.ones(image.shape[:2], bool)
    outside[:, :260] = False  # the face and what is left of the photo
    x0, y0, x1, y1 = processor.labeler.region(image.shape)
    outside[y0:y1, x0:x1] = False
    assert np.array_equal(frame.image[outside], image[outside])


def test_turning_away_and_tiny_faces_score_down(processor: FrameProcessor) -> None:
    identity = processor.identity
    assert identity is not None
    points = identity.points.copy() * 2.0 + np.float32([100, 100, 0])
    shape = (800, 800, 3)
    assert swap_weight(points, shape, 0.0) == 1.0
    assert swap_weight(points, shape, 57.5) == pytest.approx(0.5)
    assert swap_weight(points, shape, 80.0) == 0.0
    tiny = identity.points.copy() * 0.1
    assert swap_weight(tiny, shape, 0.0) == 0.0
    yaw = np.deg2rad(60.0)
    turn = np.array([[np.cos(yaw), 0, np.sin(yaw)], [0, 1, 0], [-np.sin(yaw), 0, np.cos(yaw)]])
    centre = identity.points.mean(axis=0)
    turned = ((identity.points - centre) @ turn.T + centre).astype(np.float32)
    pose = head_pose(identity, turned)
    assert pose.rotation == pytest.approx(turn, abs=1e-3)


def test_fade_moves_at_a_limited_rate() -> None:
    fade = Fade(per_s=5.0)
    assert fade.strength is None
    assert fade.update(1.0, 0) == 1.0
    values = [fade.update(0.0, i * FRAME_NS) for i in range(1, 10)]
    assert values[0] == pytest.approx(1 - 5 / 30, abs=1e-3)
    assert values[-1] == 0.0 == fade.strength


def test_a_face_state_is_kept_with_its_track_and_goes_with_it(
    processor: FrameProcessor, astronaut: np.ndarray
) -> None:
    processor.reset()
    assert processor.process(Frame(slide(astronaut, 40), 0, 0)).swapped
    (track,) = processor.tracks
    state = track.state
    assert state.fade.strength == 1.0
    assert state.neutral.mesh is not None
    colour = (state.colour.matrix, state.colour.detail, state.colour.shading)
    assert any(c is not None for c in colour)
    assert processor.process(Frame(slide(astronaut, 40), 1, FRAME_NS)).swapped
    assert processor.tracks == [track] and track.state is state
    # no per-face store beside the tracks for the processor to prune
    assert not [name for name, v in vars(processor).items() if isinstance(v, dict)]
    empty = np.full((SIZE[1], SIZE[0], 3), 100, np.uint8)
    assert not processor.process(Frame(empty, 2, 2 * FRAME_NS)).swapped
    assert processor.tracks == []
    assert processor.process(Frame(slide(astronaut, 40), 3, 3 * FRAME_NS)).swapped
    (again,) = processor.tracks
    assert again.track_id != track.track_id and again.state is not state
    assert again.state.fade.strength == 1.0  # a new face starts at its weight
