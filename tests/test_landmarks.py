"""478-point landmarks on real photos: placement, orientation, rotation stability."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from appliance.inference.litert import LiteRTBackend
from appliance.modelstore import ModelStore
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.blendshapes import BlendshapeModel
from appliance.vision.mesh import CHIN, FOREHEAD, LEFT_EYE, NOSE_TIP, RIGHT_EYE, UPPER_LIP
from appliance.vision.types import FaceLandmarks


@pytest.fixture(scope="module")
def analyzer(store: ModelStore) -> FaceAnalyzer:
    return FaceAnalyzer.from_store(store, LiteRTBackend())


def one_face(analyzer: FaceAnalyzer, image: np.ndarray) -> FaceLandmarks:
    faces = analyzer.analyze(image, refine=True)
    assert len(faces) == 1
    return faces[0]


@pytest.mark.parametrize("fixture", ["astronaut", "grace_hopper"])
def test_layout_of_the_face(
    analyzer: FaceAnalyzer, request: pytest.FixtureRequest, fixture: str
) -> None:
    image = request.getfixturevalue(fixture)
    face = one_face(analyzer, image)
    assert face.points.shape == (478, 3)
    assert face.presence > 0.9
    det = analyzer.detect(image)[0]
    x0, y0, x1, y1 = det.box
    margin = 0.25 * (x1 - x0)
    core = face.xy[:468]
    assert np.all(core[:, 0] > x0 - margin) and np.all(core[:, 0] < x1 + margin)
    assert np.all(core[:, 1] > y0 - margin) and np.all(core[:, 1] < y1 + margin)
    right_eye = face.xy[list(RIGHT_EYE)].mean(axis=0)  # image-left
    left_eye = face.xy[list(LEFT_EYE)].mean(axis=0)
    nose, mouth = face.xy[NOSE_TIP], face.xy[UPPER_LIP]
    assert right_eye[0] < nose[0] < left_eye[0], "left/right swapped"
    assert max(right_eye[1], left_eye[1]) < nose[1] < mouth[1] < face.xy[CHIN][1]
    assert face.xy[FOREHEAD][1] < min(right_eye[1], left_eye[1])
    # Irises sit inside their eyes.
    assert np.linalg.norm(face.xy[468] - right_eye) < 0.3 * np.linalg.norm(left_eye - right_eye)


def _rotate(image: np.ndarray, degrees: float) -> tuple[np.ndarray, np.ndarray]:
    h, w = image.shape[:2]
    matrix = cv2.getRotationMatrix2D((w / 2, h / 2), degrees, 1.0)
    return cv2.warpAffine(image, matrix, (w, h), borderMode=cv2.BORDER_REFLECT), matrix


@pytest.mark.parametrize("degrees", [-10.0, 10.0])
def test_stable_under_rotation(
    analyzer: FaceAnalyzer, astronaut: np.ndarray, degrees: float
) -> None:
    base = one_face(analyzer, astronaut)
    rotated, matrix = _rotate(astronaut, degrees)
    moved = one_face(analyzer, rotated)
    expected = base.xy[:468] @ matrix[:, :2].T + matrix[:, 2]
    error = np.linalg.norm(moved.xy[:468] - expected, axis=1)
    eye_distance = np.linalg.norm(base.xy[33] - base.xy[263])
    assert float(np.median(error)) < 0.05 * eye_distance
    assert float(np.percentile(error, 95)) < 0.12 * eye_distance


def test_blendshapes_neutral_photo(
    store: ModelStore, analyzer: FaceAnalyzer, grace_hopper: np.ndarray
) -> None:
    model = BlendshapeModel(LiteRTBackend().load(store.path("face_blendshapes")))
    scores = model.run(one_face(analyzer, grace_hopper).points)
    assert len(scores) == 52
    assert scores["eyeBlinkLeft"] < 0.5 and scores["eyeBlinkRight"] < 0.5
    assert all(0.0 <= v <= 1.0 for v in scores.values())
