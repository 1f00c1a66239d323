"""Face detection on real photos: boxes checked by eye, no faces on animals."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from appliance.inference.litert import LiteRTBackend
from appliance.modelstore import ModelStore
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.anchors import FULL_RANGE, SHORT_RANGE, make_anchors
from appliance.vision.detector import FaceDetector
from tests.conftest import shared_media

# Reference boxes (x0, y0, x1, y1), drawn on the photos and checked by eye.
ASTRONAUT_BOX = (178, 81, 272, 175)
GRACE_HOPPER_BOX = (166, 143, 366, 343)
PORTRAITS = [
    "portrait_einstein_bw.jpg",
    "portrait_dylan_bw.jpg",
    "portrait_woman_outdoor.jpg",
    "portrait_woman_pose.jpg",
    "portrait_man_mouth_open.jpg",
    "painting_seated_woman.jpg",
    "attack_photo_in_hand.jpg",
]


def iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[2], b[2]), min(a[3], b[3])
    inter = max(0.0, x1 - x0) * max(0.0, y1 - y0)
    area = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / area


@pytest.fixture(scope="module")
def analyzer(store: ModelStore) -> FaceAnalyzer:
    return FaceAnalyzer.from_store(store, LiteRTBackend())


def test_anchor_counts_match_models() -> None:
    assert len(make_anchors(SHORT_RANGE)) == 896
    assert len(make_anchors(FULL_RANGE)) == 2304


@pytest.mark.parametrize(
    ("fixture", "reference"), [("astronaut", ASTRONAUT_BOX), ("grace_hopper", GRACE_HOPPER_BOX)]
)
def test_exactly_one_face_matching_reference(
    analyzer: FaceAnalyzer, request: pytest.FixtureRequest, fixture: str, reference: tuple[int, ...]
) -> None:
    image = request.getfixturevalue(fixture)
    found = analyzer.detect(image)
    assert len(found) == 1
    assert iou(found[0].box, reference) >= 0.7
    right_eye, left_eye, nose, mouth = found[0].keypoints[:4]
    assert right_eye[0] < nose[0] < left_eye[0]
    assert max(right_eye[1], left_eye[1]) < nose[1] < mouth[1]


def test_full_range_model_finds_the_face_too(store: ModelStore, astronaut: np.ndarray) -> None:
    full = FaceDetector(LiteRTBackend().load(store.path("face_detector_full")), "full")
    found = full.detect(astronaut)
    assert len(found) == 1
    assert iou(found[0].box, ASTRONAUT_BOX) >= 0.6


def test_wrong_model_for_kind_is_refused(store: ModelStore) -> None:
    with pytest.raises(ValueError, match="anchors"):
        FaceDetector(LiteRTBackend().load(store.path("face_detector_full")), "short")


def test_letterbox_mapping_survives_padding(analyzer: FaceAnalyzer, astronaut: np.ndarray) -> None:
    wide = cv2.copyMakeBorder(astronaut, 0, 0, 200, 0, cv2.BORDER_CONSTANT)
    found = analyzer.detect(wide)
    shifted = (ASTRONAUT_BOX[0] + 200, ASTRONAUT_BOX[1], ASTRONAUT_BOX[2] + 200, ASTRONAUT_BOX[3])
    assert len(found) == 1 and iou(found[0].box, shifted) >= 0.7


def test_blank_image_has_no_face(analyzer: FaceAnalyzer) -> None:
    assert analyzer.detect(np.full((480, 640, 3), 128, np.uint8)) == []


@pytest.mark.parametrize("name", ["negative_dog.jpg", "negative_cat.jpg"])
def test_no_human_face_on_animals(analyzer: FaceAnalyzer, name: str) -> None:
    image = cv2.imread(str(shared_media(name)))
    assert analyzer.detect(image) == []
    assert analyzer.analyze(image) == []


@pytest.mark.parametrize("name", PORTRAITS)
def test_portrait_faces_found(analyzer: FaceAnalyzer, name: str) -> None:
    image = cv2.imread(str(shared_media(name)))
    faces = analyzer.analyze(image)
    assert len(faces) == 1
    x0, y0, x1, y1 = faces[0].box()
    h, w = image.shape[:2]
    assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
    assert (x1 - x0) > 0.1 * min(h, w)
