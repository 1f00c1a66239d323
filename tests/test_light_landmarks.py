"""Light landmarks (FaceMesh v1 + MediaPipe Iris) on real photos: the 478-point layout the
attention model gives, irises that move with the eyes, one eye refreshed a frame in turn,
and the tracker's choice between the two models (small faces, the ladder's light level).
Nothing here is timed (the cost is in `mirror bench`)."""

from __future__ import annotations

import logging
from typing import TypeVar

import cv2
import numpy as np
import pytest

from appliance.modelstore import ModelStore
from appliance.tools.real_variants import FAR_FACE_PX, FAR_SIZE, _background, far_frame
from appliance.vision import analyzer as analyzer_module
from appliance.vision.analyzer import LIGHT_IRIS_MODEL, FaceAnalyzer, LandmarkChoice
from appliance.vision.face_pool import ALONE, CALLER, FacePool
from appliance.vision.light_landmarks import (
    _EYES,
    LIGHT_BELOW_PX,
    LightLandmarkModel,
    wants_light,
)
from appliance.vision.liveness import LivenessGate
from appliance.vision.roi import roi_from_landmarks
from appliance.vision.tracker import Tracker, inter_ocular
from appliance.vision.types import FaceLandmarks, Roi
from tests.conftest import landmark_runs, media_frames

T = TypeVar("T")

FRAME_NS = 33_333_333
IRISES = (468, 473)


def _light(analyzer: FaceAnalyzer) -> LightLandmarkModel:
    model = analyzer.light_on(CALLER)
    assert model is not None, "the light landmark models are in the store"
    return model


def _scaled(image: np.ndarray, factor: float) -> np.ndarray:
    return np.asarray(cv2.resize(image, None, fx=factor, fy=factor, interpolation=cv2.INTER_AREA))


def _errors(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per point, the distance between two 478-point meshes in inter-ocular distances."""
    return np.asarray(np.linalg.norm(a[:, :2] - b[:, :2], axis=1) / inter_ocular(a))


@pytest.mark.parametrize("factor", [1.0, 0.5])
def test_light_landmarks_match_the_attention_model(
    analyzer: FaceAnalyzer, astronaut: np.ndarray, grace_hopper: np.ndarray, factor: float
) -> None:
    for photo in (astronaut, grace_hopper):
        image = _scaled(photo, factor)
        full = analyzer.analyze(image)[0]
        roi = roi_from_landmarks(full.points)
        light = _light(analyzer).run(image, roi)
        assert light.light and light.fresh_eye is None and light.presence > 0.9
        assert light.points.shape == (478, 3)
        err = _errors(full.points, light.points)
        assert err[:468].mean() < 0.04, f"mesh {err[:468].mean():.3f} IOD from the attention's"
        # the iris centres first, their rings in the same order as the attention model's
        assert err[468:].max() < 0.04, f"irises {np.round(err[468:], 3)}"
        for centre in IRISES:
            ring = light.points[centre + 1 : centre + 5, :2] - light.points[centre, :2]
            radius = np.linalg.norm(ring, axis=1)
            assert 0.05 < radius.mean() / inter_ocular(light.points) < 0.15
        assert np.corrcoef(full.points[:468, 2], light.points[:468, 2])[0, 1] > 0.95


def test_irises_follow_the_eyes_not_the_face(analyzer: FaceAnalyzer, astronaut: np.ndarray) -> None:
    """The iris model sees where the eye looks: the photo's irises moved sideways inside
    still eye corners (the pixels around each iris shifted) move the light landmarks' iris
    centres with them, as far as they move the attention model's, and not the corners."""
    image = astronaut.copy()
    roi = roi_from_landmarks(analyzer.analyze(image)[0].points)
    light, full = _light(analyzer), analyzer.landmarks
    before, before_full = light.run(image, roi), full.run(image, roi)
    shift = 0.06 * inter_ocular(before.points)  # about an eighth of an eye's width
    moved = image.copy()
    for centre in IRISES:
        x, y = before.points[centre, :2]
        r = int(np.linalg.norm(before.points[centre + 1, :2] - before.points[centre, :2]) * 1.3)
        x0, y0 = int(x) - r, int(y) - r
        patch = image[y0 : y0 + 2 * r, x0 : x0 + 2 * r]
        matrix = np.float32([[1, 0, shift], [0, 1, 0]])
        shifted = cv2.warpAffine(patch, matrix, patch.shape[1::-1], borderMode=cv2.BORDER_REFLECT)
        disc = np.zeros(patch.shape[:2], np.uint8)
        cv2.circle(disc, (r, r), int(r * 0.8), 255, -1)
        moved[y0 : y0 + 2 * r, x0 : x0 + 2 * r][disc > 0] = shifted[disc > 0]
    after, after_full = light.run(moved, roi), full.run(moved, roi)
    for centre in IRISES:
        dx = float(after.points[centre, 0] - before.points[centre, 0])
        dx_full = float(after_full.points[centre, 0] - before_full.points[centre, 0])
        assert dx > 0.3 * shift, f"iris {centre} moved {dx:.2f} px of {shift:.2f}"
        assert dx > 0.8 * dx_full, f"iris {centre}: {dx:.2f} px, the attention's {dx_full:.2f}"
    corners = [33, 133, 362, 263]
    assert _errors(before.points, after.points)[corners].max() < 0.03


def test_one_eye_a_frame_in_turn_the_other_carried_with_the_face(
    analyzer: FaceAnalyzer, astronaut: np.ndarray
) -> None:
    """Followed, the iris model runs on one eye a frame, in turn; the other eye's points
    come from the frame before, moved with the face, close to a fresh look at it."""
    model = _light(analyzer)
    first = analyzer.analyze(astronaut)[0]
    roi = roi_from_landmarks(first.points)
    before: FaceLandmarks | None = None
    fresh_eyes = []
    for step in range(6):
        shift = 3.0 * step  # the face moves 3 px a frame
        image = cv2.warpAffine(
            astronaut,
            np.float32([[1, 0, shift], [0, 1, 0]]),
            astronaut.shape[1::-1],
            borderMode=cv2.BORDER_REPLICATE,
        )
        crop = Roi(roi.cx + shift, roi.cy, roi.size, roi.angle)
        face = model.run(image, crop, before)
        fresh_eyes.append(face.fresh_eye)
        if before is not None:
            both = model.run(image, crop)  # both eyes looked at on this frame
            carried = _EYES[1 - (face.fresh_eye or 0)].indices
            err = _errors(both.points, face.points)
            assert err[carried].max() < 0.03, f"carried eye off by {err[carried].max():.3f} IOD"
        before = face
    assert fresh_eyes == [None, 0, 1, 0, 1, 0]


def test_eye_tables_cover_each_eye_once() -> None:
    right, left = (set(eye.region) for eye in _EYES)
    assert len(right) == len(left) == 71 and not right & left
    assert {33, 133} <= right and {362, 263} <= left
    assert all(i < 468 for i in right | left)


def test_the_tracker_gives_small_faces_the_light_landmarks(
    analyzer: FaceAnalyzer, astronaut: np.ndarray
) -> None:
    big = _scaled(astronaut, 2.0)  # its crop is about 320 px
    for image, light in ((astronaut, True), (big, False)):
        tracker = Tracker(analyzer)
        for i in range(3):
            tracks = tracker.update(image, i * FRAME_NS)
        (track,) = tracks
        assert track.raw.light is light, f"crop {track.raw.roi.size:.0f} px"
        assert (track.raw.roi.size < LIGHT_BELOW_PX) is light
    everyone = Tracker(analyzer)
    everyone.light = True  # the ladder's light level
    for i in range(3):
        (track,) = everyone.update(big, i * FRAME_NS)
    assert track.raw.light and track.raw.fresh_eye in (0, 1)


def _tile(analyzer: FaceAnalyzer, image: np.ndarray, faces: int, side: int) -> np.ndarray:
    """``faces`` copies of the face in ``image`` (a square twice its size, scaled to
    ``side``) in a 2x2 tile, the rest grey."""
    points = analyzer.analyze(image)[0].points[:, :2]
    lo, hi = points.min(axis=0), points.max(axis=0)
    half = float((hi - lo).max())
    x0, y0 = (np.maximum((lo + hi) / 2 - half, 0)).astype(int)
    cell = cv2.resize(image[y0 : y0 + 2 * int(half), x0 : x0 + 2 * int(half)], (side, side))
    out = np.full((2 * side, 2 * side, 3), 128, np.uint8)
    for i in range(faces):
        row, col = divmod(i, 2)
        out[row * side : (row + 1) * side, col * side : (col + 1) * side] = cell
    return out


@pytest.mark.parametrize(("faces", "light"), [(2, False), (3, True)])
def test_a_crowd_gets_the_light_landmarks(
    analyzer: FaceAnalyzer, astronaut: np.ndarray, faces: int, light: bool
) -> None:
    """Big faces (320 px crops) on two CPUs: two run at once on the face pool, each on the
    full model; a third would wait its turn, so three or more all get the light models.
    A face the liveness gate waits for keeps the full one even in a crowd."""
    assert analyzer.crowds  # ``auto``
    image = _tile(analyzer, astronaut, faces, 400)  # faces 200 px tall
    pool = FacePool()
    pool.parallel = True  # two faces at once (as on two CPUs), whatever this machine has
    try:
        tracker = Tracker(analyzer, policy="all", max_faces=4, pool=pool, detect_ahead=False)
        for i in range(4):  # found (the full model), then a round of turns
            tracks = tracker.update(image, i * FRAME_NS)
        assert len(tracks) == faces
        assert all(t.raw.roi.size > LIGHT_BELOW_PX * 1.2 for t in tracks)
        assert [t.raw.light for t in tracks] == [light] * faces
        watched = tracks[0].track_id
        tracker.watching = lambda track_id: track_id == watched
        tracks = tracker.update(image, 4 * FRAME_NS)
        assert [t.raw.light for t in tracks if t.track_id == watched] == [False]
    finally:
        pool.close()


def _crowd_frames(
    analyzer: FaceAnalyzer, image: np.ndarray, faces: int, record: list[T]
) -> list[list[T]]:
    """What ``record`` got in each of four frames of a tracker following the ``faces``
    faces of ``image`` on a two-worker face pool, after three frames to settle (it
    detects on the first only)."""
    pool = FacePool()
    pool.parallel = True
    try:
        tracker = Tracker(analyzer, policy="all", max_faces=4, pool=pool, detect_ahead=False)
        tracker.detect_every = 30
        for i in range(3):
            tracker.update(image, i * FRAME_NS)
        per_frame = []
        for i in range(3, 7):
            record.clear()
            assert len(tracker.update(image, i * FRAME_NS)) == faces
            per_frame.append(record[:])
        return per_frame
    finally:
        pool.close()


@pytest.mark.parametrize(("faces", "runs"), [(2, [2, 2, 2, 2]), (3, [1, 1, 1, 1])])
def test_a_crowd_takes_turns(
    analyzer: FaceAnalyzer,
    astronaut: np.ndarray,
    monkeypatch: pytest.MonkeyPatch,
    faces: int,
    runs: list[int],
) -> None:
    """On two CPUs a crowd's faces also take turns from the first frame (``auto``): one
    face's landmarks a frame, each every third frame, the others coasting on their last
    motion (as on the ladder's last level), so three faces' landmarks cost one face's.
    A pair, which the face pool runs at once, runs every frame."""
    assert analyzer.crowds  # ``auto``
    counted = landmark_runs(monkeypatch)
    image = _tile(analyzer, astronaut, faces, 400)
    per_frame = [len(ran) for ran in _crowd_frames(analyzer, image, faces, counted)]
    assert sorted(per_frame) == runs, f"landmark runs per frame {per_frame}"


def test_the_face_whose_turn_it_is_runs_alone_on_every_core(
    analyzer: FaceAnalyzer, astronaut: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three faces taking turns run one light landmark model a frame, on the interpreters of
    a face alone (a thread per core), not on a place of the face pool: by place, a coasting
    face's place left its partner one core."""
    workers: list[int] = []
    light_on = analyzer.light_on

    def recorded(worker: int) -> object:
        workers.append(worker)
        return light_on(worker)

    monkeypatch.setattr(analyzer, "light_on", recorded)
    image = _tile(analyzer, astronaut, 3, 400)
    per_frame = _crowd_frames(analyzer, image, 3, workers)
    assert per_frame == [[ALONE]] * 4, f"workers per frame {per_frame}"


def test_switching_models_has_a_margin() -> None:
    points = np.zeros((478, 3), np.float32)
    light = FaceLandmarks(points, 1.0, Roi(0, 0, 180, 0), light=True)
    full = FaceLandmarks(points, 1.0, Roi(0, 0, 180, 0))
    edge = Roi(0, 0, LIGHT_BELOW_PX * 1.1, 0)
    assert wants_light(Roi(0, 0, LIGHT_BELOW_PX - 1, 0), None)
    assert wants_light(edge, light) and not wants_light(edge, full)
    assert not wants_light(Roi(0, 0, LIGHT_BELOW_PX * 1.2, 0), light)
    assert wants_light(Roi(0, 0, 1000, 0), full, everyone=True)


def test_a_store_without_the_light_models_uses_the_full_one(
    tmp_path: object,
    store: ModelStore,
    astronaut: np.ndarray,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from appliance.errors import ModelMissingError
    from appliance.inference.litert import LiteRTBackend

    real_path = store.path

    def path(name: str) -> object:
        if name == LIGHT_IRIS_MODEL:
            raise ModelMissingError(f"{name} is not in the model cache")
        return real_path(name)

    monkeypatch.setattr(store, "path", path)
    with caplog.at_level(logging.WARNING):
        analyzer = FaceAnalyzer.from_store(store, LiteRTBackend())
    assert analyzer.light_models is None and analyzer.light_on(CALLER) is None
    assert "small faces get the full landmark model" in caplog.text
    tracker = Tracker(analyzer)
    (track,) = tracker.update(astronaut, 0)
    assert not track.raw.light


# (settings.detector.landmarks, usable CPUs, light models loaded, every face light)
CHOICES: list[tuple[LandmarkChoice, int, bool, bool]] = [
    ("auto", 2, True, False),
    ("auto", 1, True, True),  # one CPU: the attention model has no second thread
    ("full", 1, False, False),
    ("light", 4, True, True),
]


@pytest.mark.parametrize("case", CHOICES)
def test_the_landmarks_setting_chooses_the_models(
    store: ModelStore,
    astronaut: np.ndarray,
    monkeypatch: pytest.MonkeyPatch,
    case: tuple[LandmarkChoice, int, bool, bool],
) -> None:
    from appliance.inference.litert import LiteRTBackend

    choice, cpus, models, always = case
    monkeypatch.setattr(analyzer_module, "usable_cpus", lambda: cpus)
    analyzer = FaceAnalyzer.from_store(store, LiteRTBackend(), landmarks=choice)
    assert (analyzer.light_models is not None) is models and analyzer.light_always is always
    big = _scaled(astronaut, 2.0)  # a 320 px crop: the full model unless always light
    for image, small in ((big, False), (astronaut, True)):
        tracker = Tracker(analyzer)
        (track,) = tracker.update(image, 0)
        (track,) = tracker.update(image, FRAME_NS)
        assert track.raw.light is (always or (small and models))


def test_a_face_the_liveness_gate_waits_for_keeps_the_full_model(analyzer: FaceAnalyzer) -> None:
    """A visitor at the back of the room (an 80 px face: light by its size) blinks once,
    for one frame, at 1.67 s. The light landmarks see that blink at 0.48 of the open eyes'
    signal (a blink counts below 0.4): on them the gate is still waiting 3 s in. Watched
    (the processor's liveness stage), the face keeps the full model until it is LIVE,
    which it is at that blink, and gets the light landmarks after."""
    frames = media_frames("expressive_woman_long.mp4", 90)
    face_px = float(np.ptp(analyzer.analyze(frames[0])[0].points[:468, 1]))
    background = _background(FAR_SIZE, seed=3)
    far = [far_frame(f, FAR_FACE_PX / face_px, background) for f in frames]
    for watched in (False, True):
        tracker, gate = Tracker(analyzer), LivenessGate("blink")
        if watched:
            tracker.watching = gate.watching
        live_at, light = None, []
        for i, image in enumerate(far):
            stamp = round(i * 1e9 / 30)
            tracks = tracker.update(image, stamp)
            gate.update({t.track_id: t.raw.points for t in tracks}, FAR_SIZE, stamp)
            (track,) = tracks
            light.append(track.raw.light)
            if live_at is None and gate.is_live(track.track_id):
                live_at = i
        if not watched:
            assert live_at is None and all(light)
        else:
            assert live_at is not None and 1.6 < live_at / 30 < 1.8
            assert not any(light[: live_at + 1]) and all(light[live_at + 2 :])


def test_the_gate_watches_faces_until_they_are_live() -> None:
    off = LivenessGate("off")
    assert not off.watching(None) and not off.watching(3)
    gate = LivenessGate("blink")
    assert gate.watching(None) and gate.watching(3)  # new, and not seen yet


def test_from_an_attention_frame_the_other_eye_moves_with_the_face(
    analyzer: FaceAnalyzer, astronaut: np.ndarray
) -> None:
    """The frame before came from the attention model (no mesh of its own to correct):
    the eye not looked at moves with the rest of the face, close to where the attention
    model puts it on this frame."""
    first = analyzer.analyze(astronaut)[0]
    roi = roi_from_landmarks(first.points)
    moved = cv2.warpAffine(
        astronaut, np.float32([[1, 0, 4], [0, 1, 2]]), astronaut.shape[1::-1], borderMode=1
    )
    crop = Roi(roi.cx + 4, roi.cy + 2, roi.size, roi.angle)
    model = _light(analyzer)
    face = model.run(moved, crop, analyzer.landmarks.run(astronaut, roi))
    assert face.fresh_eye == 0
    again = analyzer.landmarks.run(moved, crop)
    err = _errors(again.points, face.points)[_EYES[1].indices]
    assert err.max() < 0.05, f"carried eye off by {err.max():.3f} IOD"
