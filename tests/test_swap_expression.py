"""The visitor's expression, at the visitor's amplitude (issue 34): the photo's own
expression is taken out at enrolment, and the lids close as far as the visitor's.

Real models on the shared portraits and a frame of the shared video; the scores
are the blendshape model's, the one ``mirror eval`` measures with.
"""

from __future__ import annotations

import numpy as np
import pytest

from appliance.config import Settings
from appliance.inference.litert import LiteRTBackend
from appliance.media.frames import Frame
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_processor
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.blendshapes import BlendshapeModel
from appliance.vision.eyelids import scale_lids
from appliance.vision.identity import enroll, read_image
from appliance.vision.mesh import RIGHT_EYE, RIGHT_EYE_EAR
from appliance.vision.neutral import close_mouth
from appliance.vision.neutralise import EXPRESSION, neutralise
from appliance.vision.roi import roi_from_landmarks
from appliance.vision.shape_transfer import eye_aspect_ratio
from tests.conftest import media_frames, shared_media


@pytest.fixture(scope="module")
def blendshapes(store: ModelStore) -> BlendshapeModel:
    return BlendshapeModel(LiteRTBackend().load(store.path("face_blendshapes")))


def _held(scores: dict[str, float]) -> float:
    return max(scores[name] for name in EXPRESSION)


@pytest.mark.parametrize(
    ("photo", "expression"),
    [("portrait_woman_pose.jpg", "mouthSmileLeft"), ("portrait_woman_outdoor.jpg", "browInnerUp")],
)
def test_the_photos_held_expression_is_taken_out_of_its_shape(
    analyzer: FaceAnalyzer, blendshapes: BlendshapeModel, photo: str, expression: str
) -> None:
    identity = enroll(read_image(shared_media(photo)), analyzer)
    before = blendshapes.run(close_mouth(identity.points))
    after = blendshapes.run(identity.shape)
    assert before[expression] > 0.4, before  # a smile, raised brows in the photo
    assert after[expression] < 0.15, after
    assert _held(after) < 0.2, after
    # only the brows and the mouth's corners move, and not far
    moved = np.linalg.norm(identity.shape[:, :2] - close_mouth(identity.points)[:, :2], axis=1)
    height = float(np.ptp(identity.points[:, 1]))
    assert moved.max() < 0.08 * height
    assert np.median(moved) < 0.002 * height


def test_a_neutral_photo_keeps_its_own_shape(
    analyzer: FaceAnalyzer, blendshapes: BlendshapeModel
) -> None:
    points = close_mouth(
        analyzer.analyze(read_image(shared_media("painting_seated_woman.jpg")))[0].points
    )
    assert _held(blendshapes.run(points)) < 0.1
    moved = np.linalg.norm(neutralise(points, blendshapes.run) - points, axis=1)
    assert moved.max() < 0.02 * float(np.ptp(points[:, 1]))


def test_the_lids_close_as_far_as_the_visitors() -> None:
    """An identity with eyes twice as open as the visitor's: the visitor's lids at a tenth
    of their opening close the swapped eye to a tenth of its own (a difference left it
    more than half open)."""
    ring = list(RIGHT_EYE)
    rest = np.zeros((478, 3))
    width = 30.0
    angles = np.linspace(0.0, 2 * np.pi, len(ring), endpoint=False)
    rest[ring, 0] = -width / 2 * np.cos(angles)  # 33 (outer) at -15, 133 (inner) at +15
    rest[ring, 1] = 5.0 * np.sin(angles)
    base = rest.copy()
    base[ring, 1] *= 2.0
    seen = rest.copy()
    seen[ring, 1] *= 0.1
    shaped = base + (seen - rest)
    out = scale_lids(shaped, base, seen, rest)
    open_ear = eye_aspect_ratio(base, RIGHT_EYE_EAR)
    assert eye_aspect_ratio(shaped, RIGHT_EYE_EAR) > 0.5 * open_ear  # the difference
    assert eye_aspect_ratio(out, RIGHT_EYE_EAR) == pytest.approx(0.1 * open_ear, rel=0.05)
    # corners and the other points are left where the difference put them
    others = [i for i in range(478) if i not in ring[1:8] + ring[9:]]
    assert np.array_equal(out[others], shaped[others])


def test_a_neutral_visitor_does_not_take_the_photos_smile(
    store: ModelStore, analyzer: FaceAnalyzer, blendshapes: BlendshapeModel
) -> None:
    """talking_man_greenscreen.mp4 starts neutral; swapped with the smiling portrait, the
    face read mouthSmile 0.24-0.28 over the visitor's (the photo's smile on everyone)."""
    processor = build_processor(
        Settings(), store, str(shared_media("portrait_woman_pose.jpg")), analyzer=analyzer
    )
    gaps = []
    for index, image in enumerate(media_frames("talking_man_greenscreen.mp4", 12)):
        frame = processor.process(Frame(image.copy(), index, index * 40_000_000))
        if index < 6:
            continue
        roi = roi_from_landmarks(processor.tracks[0].landmarks.points)
        seen = blendshapes.run(analyzer.landmarks.run(image, roi).points)
        shown = blendshapes.run(analyzer.landmarks.run(frame.image, roi).points)
        assert seen["mouthSmileLeft"] < 0.1  # the visitor does not smile here
        gaps += [shown[name] - seen[name] for name in ("mouthSmileLeft", "mouthSmileRight")]
    assert max(gaps) < 0.12, gaps
