"""Small faces (issue 17): the tile scan finds and the tracker keeps 30-60 px faces.

The group frames are real: talking-head videos of ../shared/media shrunk to
a quarter (a half-body shot) and tiled three to a frame, the bench's group case.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from appliance.tools.bench_clips import group_clip, half_body, video_clip
from appliance.tools.live_clip import JpegClip
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.tile_scan import PER_CALL, merge, tile_grid
from appliance.vision.tracker import Tracker
from appliance.vision.types import Detection
from tests.conftest import shared_media

FRAME_NS = 33_333_333
VIDEOS = ["talking_man_greenscreen.mp4", "expressive_woman.mp4"]
SIZES = [(1280, 720), (640, 480)]


def group(name: str, size: tuple[int, int], frames: int) -> JpegClip:
    return group_clip(video_clip(shared_media(name), size, frames))


@pytest.mark.parametrize("size", [(1280, 720), (640, 480), (1920, 1080), (500, 400)])
def test_tiles_cover_the_frame_and_overlap_by_a_quarter(size: tuple[int, int]) -> None:
    w, h = size
    tiles = tile_grid(size, 384, 0.25)
    covered = np.zeros((h, w), np.uint8)
    for x, y, side in tiles:
        assert side == 384 and x + side <= w and y + side <= h
        covered[y : y + side, x : x + side] += 1
    assert covered.min() >= 1
    xs = sorted({x for x, _, _ in tiles})
    assert all(b - a <= 0.75 * 384 for a, b in itertools.pairwise(xs))  # a 96 px face
    assert tile_grid((320, 240), 384) == []  # the whole-frame pass sees it at that scale


def test_merge_keeps_the_best_scored_of_overlapping_faces() -> None:
    kp = np.zeros((6, 2), np.float32)
    a = Detection((0, 0, 50, 50), kp, 0.7)
    b = Detection((5, 5, 55, 55), kp, 0.9)
    c = Detection((200, 0, 250, 50), kp, 0.8)
    assert merge([a, b, c]) == [b, c]


@pytest.mark.parametrize("size", SIZES)
def test_half_body_faces_are_small_and_missed_by_the_whole_frame_pass(
    analyzer: FaceAnalyzer, size: tuple[int, int]
) -> None:
    """Why the scan exists: the whole-frame detector finds none of the group's faces."""
    clip = group("talking_man_greenscreen.mp4", size, 3)
    frame = clip.decode(0)
    assert analyzer.candidates(frame) == []
    found: list[Detection] = []
    assert analyzer.tiles is not None
    for _ in range(len(analyzer.tiles.grid(size)) // PER_CALL + 1):
        found = merge(found + analyzer.tiles.detect_next(frame))
    assert len(found) == 3
    assert all(25 <= d.width <= 70 for d in found), [d.width for d in found]


@pytest.mark.parametrize("name", VIDEOS)
@pytest.mark.parametrize("size", SIZES)
def test_tracker_finds_and_keeps_every_small_face_of_a_group(
    analyzer: FaceAnalyzer, name: str, size: tuple[int, int]
) -> None:
    clip = group(name, size, 50)
    tracker = Tracker(analyzer, detect_every=5, policy="all", max_faces=3)
    counts = []
    for i in range(len(clip)):
        counts.append(len(tracker.update(clip.decode(i), i * FRAME_NS)))
    # found within a sweep of the tiles (3 tiles every 5 frames: 15 tiles at 720p in
    # 25 frames), then kept through every later detection frame, where nothing sees them
    assert counts[25:] == [3] * (len(clip) - 25), counts


def test_scan_runs_only_while_there_is_room_for_more_faces(analyzer: FaceAnalyzer) -> None:
    """One tracked face with the 'largest' policy: detection frames cost no tiles."""
    clip = video_clip(shared_media("expressive_woman.mp4"), (1280, 720), 20)
    tracker = Tracker(analyzer, detect_every=5, policy="largest", max_faces=1)
    assert analyzer.tiles is not None
    tracker.update(clip.decode(0), 0)
    before = analyzer.tiles.tiles_run
    for i in range(1, len(clip)):
        assert len(tracker.update(clip.decode(i), i * FRAME_NS)) == 1
    assert tracker.detections >= 3
    assert analyzer.tiles.tiles_run == before


def test_scan_costs_a_few_tiles_every_few_frames_while_nobody_is_there(
    analyzer: FaceAnalyzer,
) -> None:
    """Nobody in view detects on every frame; the scan runs on one frame in five."""
    empty = np.full((720, 1280, 3), 90, np.uint8)
    tracker = Tracker(analyzer, detect_every=5, policy="all", max_faces=3)
    assert analyzer.tiles is not None
    before = analyzer.tiles.tiles_run
    for i in range(20):
        assert tracker.update(empty, i * FRAME_NS) == []
    assert tracker.detections == 20
    assert analyzer.tiles.tiles_run - before == 4 * PER_CALL  # frames 0, 5, 10, 15


def test_half_body_shrinks_the_frame_without_black_bars() -> None:
    image = np.full((480, 640, 3), 200, np.uint8)
    image[100:200, 300:340] = 0
    small = half_body(image)
    assert small.shape == image.shape
    assert int(small.min()) == 0 and (small == 0).sum() < (image == 0).sum() / 10
    assert (small[-1] == 200).all() and (small[:, 0] == 200).all()  # edges stretched
