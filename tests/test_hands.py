"""Hands in identity photos (appliance.vision.hands): MediaPipe's palm detector and hand
landmark model on the shared photos, and what enrolment does with a hand on the face.

portrait_woman_pose.jpg rests her right hand on her right cheek. Its colour is her
skin's, so the occluder test cannot see it; before the hand models, its finger edges
and shading were carried into the identity's texture and showed as rust streaks on the
visitor's cheek.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import cv2
import numpy as np
import pytest

from appliance.inference.litert import LiteRTBackend
from appliance.modelstore import ModelStore
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.hands import PALM_MODEL, Hand, hand_mask
from appliance.vision.identity import enroll, read_image
from appliance.vision.photo_measures import face_mask
from tests.conftest import shared_media
from tests.test_swap_natural import _pose_cheeks


def _pose(flip: bool) -> np.ndarray:
    photo = read_image(shared_media("portrait_woman_pose.jpg"))
    return np.ascontiguousarray(photo[:, ::-1]) if flip else photo


def _hands(analyzer: FaceAnalyzer, image: np.ndarray) -> list[Hand]:
    assert analyzer.hands is not None
    return analyzer.hands.find(image)


@pytest.mark.parametrize("flip", [False, True], ids=["photo", "mirrored"])
def test_the_hand_on_the_cheek_is_found_where_it_is(analyzer: FaceAnalyzer, flip: bool) -> None:
    image = _pose(flip)
    (hand,) = _hands(analyzer, image)
    assert hand.score > 0.9
    (face,) = analyzer.analyze(image, refine=True)
    oval = face_mask(image.shape, face.points) > 0
    held = (hand_mask(image.shape, [hand]) > 0) & oval
    share = float(held.sum() / oval.sum())
    assert 0.04 < share < 0.1, share
    # on her right cheek: the left of the photo (the right when mirrored)
    nose_x = float(face.points[1, 0])
    xs = np.nonzero(held)[1]
    assert (xs < nose_x).mean() > 0.95 if not flip else (xs > nose_x).mean() > 0.95


@pytest.mark.parametrize(
    "name", ["portrait_dylan_bw.jpg", "portrait_einstein_bw.jpg", "portrait_woman_outdoor.jpg"]
)
def test_no_hand_where_there_is_none_at_the_face(analyzer: FaceAnalyzer, name: str) -> None:
    """The palm detector fires on Dylan's face (0.62); the hand model's score refuses it.
    Einstein's hand at the photo's lower edge is under the palm threshold."""
    assert _hands(analyzer, read_image(shared_media(name))) == []


def test_the_mask_covers_the_fingers_and_grows_with_the_hand() -> None:
    # a flat right hand, fingers up: the wrist at the bottom, knuckles 20 px apart
    points = [(100.0, 200.0)]
    for finger, x in enumerate((40.0, 70.0, 90.0, 110.0, 130.0)):
        base = 150.0 if finger else 180.0
        points += [(x, base - 25.0 * k) for k in range(4)]
    hand = Hand(np.array(points, np.float32), 1.0)
    mask = hand_mask((260, 200), [hand]) > 0
    assert mask[200, 100] and mask[75, 90] and mask[120, 70]  # wrist, a fingertip, a finger
    assert not mask[30, 10] and not mask[250, 190]
    # in a crop that starts at (20, 10) and is scaled by a half
    half = hand_mask((130, 100), [hand], offset=(20.0, 10.0), scale=0.5) > 0
    assert half[(200 - 10) // 2, (100 - 20) // 2] and not half[5, 90]


@pytest.mark.parametrize("flip", [False, True], ids=["turned", "turned-mirrored"])
def test_the_hand_is_not_carried_into_the_texture(analyzer: FaceAnalyzer, flip: bool) -> None:
    """The lower half of the far cheek (where her hand is) in the completed texture: its
    strongest edges (95th percentile of the gradient) are 1.21-1.27x the near cheek's
    without the hand models (finger edges); with them the near cheek, mirrored, fills
    it (0.93-1.04x; 0.52-0.64x when the mirrored side was sampled unflipped). The face-parsing
    model is left out here: it finds most of the fingers too (``test_segmentation``)."""
    analyzer = dataclasses.replace(analyzer, parser=None)
    without = dataclasses.replace(analyzer, hands=None)
    ratios = []
    for which in (without, analyzer):
        texture, uv, cheeks = _pose_cheeks(which, flip, 1.0)
        opaque = cv2.erode((texture[..., 3] > 127).astype(np.uint8), np.ones((5, 5), np.uint8))
        used = (opaque > 0) & (cheeks > 0)
        used &= np.arange(texture.shape[0])[:, None] > uv[1, 1]  # below the nose tip
        grey = cv2.cvtColor(texture[..., :3], cv2.COLOR_BGR2GRAY).astype(np.float32)
        gradient = np.hypot(cv2.Sobel(grey, cv2.CV_32F, 1, 0), cv2.Sobel(grey, cv2.CV_32F, 0, 1))
        left = np.arange(texture.shape[1])[None, :] < uv[1, 0]
        far, near = (used & left, used & ~left) if not flip else (used & ~left, used & left)
        ratios.append(np.percentile(gradient[far], 95) / np.percentile(gradient[near], 95))
    assert ratios[0] > 1.2  # the streaks the hand models take away
    assert ratios[1] < 1.1, ratios


def test_without_the_hand_models_enrolment_goes_on_and_says_why(
    tmp_path: Path, store: ModelStore, caplog: pytest.LogCaptureFixture
) -> None:
    """An offline bundle made before the hand models: no hand is looked for, one warning."""
    for name, entry in store.manifest.entries().items():
        if name != PALM_MODEL:
            (tmp_path / entry.file).symlink_to(store.path(name))
    partial = FaceAnalyzer.from_store(ModelStore(cache_dir=tmp_path), LiteRTBackend())
    photo = _pose(False)
    with caplog.at_level(logging.WARNING, logger="appliance.vision.hands"):
        identity = enroll(photo, partial)
        assert partial.hands is not None and partial.hands.find(photo) == []
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "hands in identity photos are not looked for" in warnings[0]
    assert identity.completed is not None
