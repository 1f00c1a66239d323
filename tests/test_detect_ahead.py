"""The periodic detection on a helper thread (issue 17): off the frame's critical path.

A real clip is followed with ``detect_ahead``: after the first frame (which
must detect in line: nobody is followed yet) the processing thread never runs
the detector model itself, the helper's own interpreter does, on the
``detect`` thread, and its results are still taken (the tracker's detection
count rises every few frames) without breaking the track. While there is room
for more faces the detection includes the tile scan (small faces), on the
helper too, and a face that comes in is followed from the next detection on.
Nothing here is timed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import cv2
import numpy as np
import pytest

from appliance.config import Settings
from appliance.media.frames import Frame
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_processor
from appliance.tools.bench_clips import half_body, tile3
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.detect_ahead import DetectAhead
from appliance.vision.detector import FaceDetector, Prepared
from appliance.vision.face_pool import FacePool
from appliance.vision.tracker import Tracker
from appliance.vision.types import Detection
from tests.conftest import media_frames

FRAME_NS = 33_333_333
EVERY = 5


def _clip(frames: int) -> list[np.ndarray]:
    return media_frames("expressive_woman.mp4", frames, (640, 480))


class _Paced:
    """Waits until frame ``i``'s time at 30 fps (a loop that ran late goes on at once)."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def wait(self, i: int) -> None:
        time.sleep(max(0.0, self.start + i * FRAME_NS / 1e9 - time.monotonic()))


def _threads_of(monkeypatch: pytest.MonkeyPatch, detector: FaceDetector) -> list[str]:
    """Wraps the detector's model step; the list gets the thread name of each run."""
    names: list[str] = []
    finish: Callable[[Prepared], list[Detection]] = detector.finish

    def recording(prepared: Prepared) -> list[Detection]:
        names.append(threading.current_thread().name)
        return finish(prepared)

    monkeypatch.setattr(detector, "finish", recording)
    return names


def test_periodic_detection_runs_on_the_helper_and_keeps_the_track(
    analyzer: FaceAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    tracker = Tracker(
        analyzer, EVERY, "largest", 1, pool=FacePool(parallel=True), detect_ahead=True
    )
    ahead = tracker.detect_ahead
    assert ahead is not None and ahead.detector is not analyzer.detector  # its own interpreter
    inline = _threads_of(monkeypatch, analyzer.detector)
    helper = _threads_of(monkeypatch, ahead.detector)
    ids = []
    clock = _Paced()  # a camera's frame period apart: the helper's time is real time (an
    # unpaced loop on a busy machine took the helper's results a few frames late: 5 of 6)
    for i, image in enumerate(_clip(40)):
        clock.wait(i)
        tracks = tracker.update(image, i * FRAME_NS)
        assert len(tracks) == 1, f"frame {i}"
        ids.append(tracks[0].track_id)
    tracker.reset()
    assert len(inline) == 1, "only the first frame (nobody followed yet) detects in line"
    assert len(helper) >= 40 // EVERY - 2 and set(helper) == {"detect_0"}, helper
    assert tracker.detections >= len(helper) - 1, "the helper's detections were taken"
    assert set(ids) == {ids[0]}, "one face, one id, through the late detections"


def test_the_helper_letterboxes_its_own_copy_of_the_frame(
    analyzer: FaceAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The letterbox (1.5 ms of a 1280x720 frame) runs on the helper too, on a copy the
    processing thread made: the swap painting into the frame meanwhile changes nothing
    the detection sees."""
    copy = analyzer.detector_copy()
    assert copy is not None
    ahead = DetectAhead(copy)
    names: list[str] = []
    prepare = copy.prepare

    def recording(image: np.ndarray) -> Prepared:
        names.append(threading.current_thread().name)
        return prepare(image)

    monkeypatch.setattr(copy, "prepare", recording)
    image = _clip(1)[0].copy()
    expected = analyzer.detector.detect(image)
    assert ahead.hold(image)
    ahead.launch()
    image[:] = 0  # painted over at once
    deadline = time.monotonic() + 10.0
    while (found := ahead.ready()) is None and time.monotonic() < deadline:
        time.sleep(0.001)
    assert found is not None and len(found) == len(expected) == 1
    assert names == ["detect_0"], "letterboxed on the helper"
    assert np.allclose(found[0].box, expected[0].box)
    assert np.allclose(found[0].keypoints, expected[0].keypoints)


def test_a_held_detection_runs_only_once_its_frame_is_done(
    analyzer: FaceAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The processor holds the periodic detection while it swaps the frame (the swap
    uses the second CPU too) and launches it when the frame is done; held, the model
    does not run, and the next update launches one nobody launched."""
    tracker = Tracker(
        analyzer, EVERY, "largest", 1, pool=FacePool(parallel=True), detect_ahead=True
    )
    ahead = tracker.detect_ahead
    assert ahead is not None
    helper = _threads_of(monkeypatch, ahead.detector)
    frames = _clip(3 * EVERY)
    i = 0
    while not ahead.held:
        tracker.update(frames[i], i * FRAME_NS, hold_detection=True)
        i += 1
    assert 1 < i <= EVERY + 1, "held on the first frame due"
    time.sleep(0.3)
    assert helper == [], "not run while held"
    tracker.launch_detection()
    assert not ahead.held
    _wait_for(lambda: helper == ["detect_0"])
    while not ahead.held:  # the next one, held and not launched by its caller ...
        tracker.update(frames[i], i * FRAME_NS, hold_detection=True)
        i += 1
    tracker.update(frames[i], i * FRAME_NS)  # ... goes at the next update
    assert not ahead.held
    _wait_for(lambda: len(helper) == 2)
    tracker.reset()


def _wait_for(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_the_processor_launches_its_held_detection_when_the_frame_is_done(
    store: ModelStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    processor = build_processor(Settings(), store, "grace_hopper")
    ahead = processor.tracker.detect_ahead
    if ahead is None:
        pytest.skip("one CPU: the periodic detection runs in line")
    held = []
    hold = ahead.hold

    def recording(image: np.ndarray, scan: bool = False) -> bool:
        started = hold(image, scan)
        held.append(started)
        return started

    monkeypatch.setattr(ahead, "hold", recording)
    helper = _threads_of(monkeypatch, ahead.detector)
    for i, image in enumerate(_clip(3 * EVERY)):
        processor.process(Frame(image.copy(), i, i * FRAME_NS))
        assert not ahead.held, f"frame {i}: left held"
    processor.reset()
    assert sum(held) >= 2 and len(helper) >= sum(held) - 1


def test_a_newcomer_is_found_soon_after_the_detection_that_saw_it(
    analyzer: FaceAnalyzer, grace_hopper: np.ndarray
) -> None:
    tracker = Tracker(analyzer, EVERY, "all", 2, pool=FacePool(parallel=True), detect_ahead=True)
    newcomer = cv2.resize(grace_hopper, (200, 240), interpolation=cv2.INTER_AREA)
    arrive = 12
    found_at = None
    clock = _Paced()  # frames a camera's frame period apart: the helper's time is real time
    for i, image in enumerate(_clip(40)):
        clock.wait(i)
        canvas = np.zeros((480, 900, 3), np.uint8)
        canvas[:, :640] = image
        if i >= arrive:
            canvas[120:360, 680:880] = newcomer
        tracks = tracker.update(canvas, i * FRAME_NS)
        if len(tracks) == 2 and found_at is None:
            found_at = i
    tracker.reset()
    assert found_at is not None, "the newcomer was never followed"
    # the next periodic detection after it came in (with the tile scan: there is room),
    # plus the frames until it is taken
    assert found_at <= arrive + EVERY + 4, found_at


def test_detecting_every_frame_stays_in_line(
    analyzer: FaceAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bench's naive loop (and the ladder's top rung) detect each frame on that frame."""
    tracker = Tracker(analyzer, 1, "largest", 1, pool=FacePool(parallel=True), detect_ahead=True)
    inline = _threads_of(monkeypatch, analyzer.detector)
    for i, image in enumerate(_clip(6)):
        tracker.update(image, i * FRAME_NS)
    assert len(inline) == 6 and tracker.detections == 6


def test_the_tile_scan_runs_on_the_helper_too(
    analyzer: FaceAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group of three small faces at 1280x720 (the bench's group case: 80 px faces the
    whole-frame model misses): after the first frame no tile is scanned in line, the
    helper's own interpreter of the full-range model scans them, and the group is
    complete and kept."""
    assert analyzer.tiles is not None
    size = (1280, 720)
    frames = [
        tile3([half_body(f)] * 3, size) for f in media_frames("expressive_woman.mp4", 40, size)
    ]
    tracker = Tracker(analyzer, EVERY, "all", 3, pool=FacePool(parallel=True), detect_ahead=True)
    ahead = tracker.detect_ahead
    assert ahead is not None and ahead.scans
    assert ahead.tile_detector is not None and ahead.tile_detector is not analyzer.tiles.detector
    inline = _threads_of(monkeypatch, analyzer.tiles.detector)
    helper = _threads_of(monkeypatch, ahead.tile_detector)
    counts = []
    clock = _Paced()  # the helper's scans take real time (unpaced: 21 frames to the group)
    for i, image in enumerate(frames):
        clock.wait(i)
        counts.append(len(tracker.update(image, i * FRAME_NS)))
        if i == 0:
            first = len(inline)
    tracker.reset()
    assert first > 0 and len(inline) == first, "after the first frame no tile runs in line"
    assert helper and set(helper) == {"detect_0"}, helper
    complete = counts.index(3)
    assert complete <= 4 * EVERY and min(counts[complete:]) == 3, counts
