"""The geometric swap on real photos and a real video, and its label."""

from __future__ import annotations

import itertools

import cv2
import numpy as np
import pytest

from appliance.config import Settings, updated
from appliance.errors import NoFaceError
from appliance.media.frames import Frame
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_processor
from appliance.pipeline.processor import FrameProcessor
from appliance.vision import eye_handover
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.eye_handover import EyeHandOver, closing
from appliance.vision.identity import enroll
from appliance.vision.mesh import FACE_OVAL
from tests.conftest import shared_media


def make_processor(
    store: ModelStore, analyzer: FaceAnalyzer, settings: Settings | None = None
) -> FrameProcessor:
    return build_processor(settings or Settings(), store, "grace_hopper", analyzer=analyzer)


def swap_once(processor: FrameProcessor, image: np.ndarray) -> Frame:
    processor.reset()
    return processor.process(Frame(image=image.copy(), index=0, capture_ns=0))


def face_mask(analyzer: FaceAnalyzer, image: np.ndarray, grow_px: int) -> np.ndarray:
    return oval_mask(analyzer.analyze(image)[0].xy, image.shape, grow_px)


def oval_mask(xy: np.ndarray, shape: tuple[int, ...], grow_px: int) -> np.ndarray:
    """The face oval of the mesh ``xy``, grown by ``grow_px`` (or its core when 0)."""
    mask = np.zeros(shape[:2], np.uint8)
    cv2.fillPoly(mask, [np.round(xy[list(FACE_OVAL)]).astype(np.int32)], 255)
    kernel = np.ones((2 * grow_px + 1, 2 * grow_px + 1), np.uint8)
    return cv2.dilate(mask, kernel) if grow_px > 0 else cv2.erode(mask, np.ones((9, 9), np.uint8))


@pytest.mark.parametrize("blend", ["feather", "poisson"])
def test_only_face_and_label_change(
    store: ModelStore, analyzer: FaceAnalyzer, astronaut: np.ndarray, blend: str
) -> None:
    settings = updated(Settings(), {"swap": {"blend": blend}})
    processor = make_processor(store, analyzer, settings)
    frame = swap_once(processor, astronaut)
    out = frame.image
    assert frame.swapped and frame.faces == 1
    assert out.shape == astronaut.shape and out.dtype == astronaut.dtype
    changed = np.any(out != astronaut, axis=2)
    # the mesh the swap drew on (this photo's small face is tracked on the light landmarks)
    drawn = processor.tracks[0].landmarks.xy
    allowed = oval_mask(drawn, astronaut.shape, grow_px=3) > 0
    x0, y0, x1, y1 = processor.labeler.region(out.shape)
    allowed[y0:y1, x0:x1] = True
    assert not np.any(changed & ~allowed), "pixels outside face and label changed"
    inside = face_mask(analyzer, astronaut, grow_px=0) > 0
    assert changed[inside].mean() > 0.6, "the face itself hardly changed"
    assert changed[y0:y1, x0:x1].mean() > 0.3, "no label drawn"


def test_keeps_visitor_eyes_when_asked(
    store: ModelStore, analyzer: FaceAnalyzer, astronaut: np.ndarray
) -> None:
    face = analyzer.analyze(astronaut)[0]
    centre = np.round(face.xy[468]).astype(int)  # an iris centre
    patch = (slice(centre[1] - 1, centre[1] + 2), slice(centre[0] - 1, centre[0] + 2))
    own_shape = updated(Settings(), {"swap": {"shape_transfer": 0.0, "eyes": "visitor"}})
    kept = swap_once(make_processor(store, analyzer, own_shape), astronaut).image
    assert np.array_equal(kept[patch], astronaut[patch])
    replaced_settings = updated(own_shape, {"swap": {"eyes": "identity"}})
    replaced = swap_once(make_processor(store, analyzer, replaced_settings), astronaut).image
    assert not np.array_equal(replaced[patch], astronaut[patch])


@pytest.mark.parametrize(("ear", "own"), [(0.30, 0.0), (0.10, 0.5), (0.03, 1.0)])
def test_the_visitor_eye_shows_as_it_closes(ear: float, own: float) -> None:
    assert closing(ear) == pytest.approx(own)


def run_hand_over(
    monkeypatch: pytest.MonkeyPatch, mode: str, ears: list[float]
) -> list[tuple[float, float]]:
    """Feed one face's eye openness at 30 fps; what shows of the visitor's own eyes."""
    series = iter(ear for ear in ears for _ in range(2))  # both eyes alike
    monkeypatch.setattr(eye_handover, "eye_aspect_ratio", lambda points, ring: next(series))
    hand_over = EyeHandOver()
    points = np.zeros((478, 3), np.float32)
    return [
        hand_over.own_eyes(points, i * 33_333_333, mode)  # type: ignore[arg-type]
        for i in range(len(ears))
    ]


def test_a_blink_shows_the_visitor_eyes_a_long_closure_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    blink = run_hand_over(monkeypatch, "blinks", [0.3] * 5 + [0.02] * 4 + [0.3] * 5)
    assert [round(r) for r, _ in blink] == [0] * 5 + [1] * 4 + [0] * 5
    long = run_hand_over(monkeypatch, "blinks", [0.02] * 45)  # 1.5 s looking down
    assert long[0] == (1.0, 1.0) and long[14] == (1.0, 1.0)  # the first 0.5 s: a blink
    assert long[-1] == (0.0, 0.0)  # then the identity's eyes come back
    rights = [r for r, _ in long]
    assert all(b <= a for a, b in itertools.pairwise(rights))  # fading, never popping back
    assert run_hand_over(monkeypatch, "visitor", [0.3])[0] == (1.0, 1.0)
    assert run_hand_over(monkeypatch, "identity", [0.02])[0] == (0.0, 0.0)


def test_a_wide_eyed_visitors_blink_shows_their_eye_before_the_fixed_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Closing counts against the visitor's own open eye: expressive_woman_long's wide
    eyes (aspect ratio 0.44) blink in one frame that the smoothed landmarks see only
    half-closed (0.23, above EYE_OPEN): the old fixed threshold never showed that blink."""
    wide = run_hand_over(monkeypatch, "blinks", [0.44] * 30 + [0.23] + [0.44] * 10)
    assert all(r == 0.0 for r, _ in wide[:30])
    assert wide[30][0] > 0.7, wide[30]
    assert wide[-1] == (0.0, 0.0)
    narrow = run_hand_over(monkeypatch, "blinks", [0.2] * 120)  # narrow eyes, never closing
    assert all(r == 0.0 for r, _ in narrow), narrow[-1]
    squint = run_hand_over(monkeypatch, "blinks", [0.44] * 30 + [0.23] * 60)  # a long squint
    assert squint[-1] == (0.0, 0.0)  # is no blink: the identity's eyes come back


def test_shape_transfer_moves_the_visitor_eyes_with_the_new_shape(
    store: ModelStore, analyzer: FaceAnalyzer, astronaut: np.ndarray
) -> None:
    """The identity's proportions move the eyes; the visitor's own eyes go with them."""
    settings = updated(Settings(), {"swap": {"eyes": "visitor"}})
    out = swap_once(make_processor(store, analyzer, settings), astronaut).image
    visitor = analyzer.analyze(astronaut)[0]
    swapped = analyzer.analyze(out)[0]
    moved = np.linalg.norm(swapped.xy[:468] - visitor.xy[:468], axis=1)
    assert np.percentile(moved, 90) > 2.0, np.percentile(moved, [50, 90])  # another shape
    for iris in (468, 473):
        before = patch_mean(astronaut, visitor.xy[iris])
        after = patch_mean(out, swapped.xy[iris])
        assert np.abs(after - before).max() < 40, (iris, before, after)


def patch_mean(image: np.ndarray, centre: np.ndarray, half: int = 1) -> np.ndarray:
    x, y = np.round(centre).astype(int)
    return image[y - half : y + half + 1, x - half : x + half + 1].reshape(-1, 3).mean(axis=0)


def test_no_face_no_swap_no_label(store: ModelStore, analyzer: FaceAnalyzer) -> None:
    blank = np.full((480, 640, 3), 90, np.uint8)
    frame = swap_once(make_processor(store, analyzer), blank)
    assert not frame.swapped and frame.faces == 0
    assert np.array_equal(frame.image, blank)


def test_identity_photo_without_face_is_refused(analyzer: FaceAnalyzer) -> None:
    with pytest.raises(NoFaceError, match="no face"):
        enroll(np.full((300, 300, 3), 200, np.uint8), analyzer, "blank")


def test_black_and_white_identity_takes_visitor_colour(
    analyzer: FaceAnalyzer, store: ModelStore
) -> None:
    einstein = cv2.imread(str(shared_media("portrait_einstein_bw.jpg")))
    visitor = cv2.imread(str(shared_media("portrait_woman_outdoor.jpg")))
    processor = make_processor(store, analyzer)
    processor.identity = enroll(einstein, analyzer, "einstein")
    out = swap_once(processor, visitor).image
    inside = face_mask(analyzer, visitor, grow_px=0) > 0
    chroma_before = cv2.cvtColor(visitor, cv2.COLOR_BGR2LAB)[inside][:, 1:].astype(float)
    chroma_after = cv2.cvtColor(out, cv2.COLOR_BGR2LAB)[inside][:, 1:].astype(float)
    assert np.abs(chroma_after.mean(axis=0) - chroma_before.mean(axis=0)).max() < 6


def test_every_face_frame_of_talking_man_is_swapped(
    store: ModelStore, analyzer: FaceAnalyzer
) -> None:
    capture = cv2.VideoCapture(str(shared_media("talking_man_greenscreen.mp4")))
    processor = make_processor(store, analyzer)
    label_box = None
    frames = with_face = 0
    while True:
        ok, image = capture.read()
        if not ok:
            break
        original = image.copy()
        frame = processor.process(Frame(image=image, index=frames, capture_ns=frames))
        has_face = bool(analyzer.analyze(original))
        with_face += int(has_face)
        if has_face:
            assert frame.swapped, f"frame {frames} has a face but was not swapped"
        if frame.swapped:
            label_box = processor.labeler.region(image.shape)
            x0, y0, x1, y1 = label_box
            assert np.any(frame.image[y0:y1, x0:x1] != original[y0:y1, x0:x1]), "unlabelled"
        frames += 1
    capture.release()
    assert frames == 78 and with_face == 78
