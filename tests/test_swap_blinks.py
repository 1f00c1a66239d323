"""Blinks come through the swap with the identity's drawn irises (issue 14).

Real models on a real clip: expressive_woman_long.mp4 blinks in one frame
(its blendshapes read eyeBlinkRight 0.62, eyeBlinkLeft 0.79 there) that the
tracker's smoothed landmarks see only half-closed. The swapped frame, read
by the same landmarker and blendshape model, must blink too.
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
from appliance.vision.roi import roi_from_landmarks
from tests.conftest import media_frames, shared_media

BLINK = 50  # expressive_woman_long.mp4: the first blink, one frame long
OPEN = 46  # eyes wide open
FPS = 30


def _frames(count: int) -> list[np.ndarray]:
    return media_frames("expressive_woman_long.mp4", count)


@pytest.mark.parametrize("photo", ["portrait_man_mouth_open.jpg", "painting_seated_woman.jpg"])
def test_the_swapped_face_blinks_with_the_visitor(
    store: ModelStore, analyzer: FaceAnalyzer, photo: str
) -> None:
    blendshapes = BlendshapeModel(LiteRTBackend().load(store.path("face_blendshapes")))
    processor = build_processor(
        Settings(), store, str(shared_media(photo)), analyzer=analyzer, max_faces=1
    )
    blinks: dict[tuple[int, str], tuple[float, float]] = {}
    for index, image in enumerate(_frames(BLINK + 1)):
        original = image.copy()
        frame = processor.process(
            Frame(image=image, index=index, capture_ns=round(index * 1e9 / FPS))
        )
        if index not in (OPEN, BLINK):
            continue
        assert frame.swapped
        roi = roi_from_landmarks(processor.tracks[0].landmarks.points)
        for name, seen in (("original", original), ("swapped", frame.image)):
            scores = blendshapes.run(analyzer.landmarks.run(seen, roi).points)
            blinks[index, name] = (scores["eyeBlinkRight"], scores["eyeBlinkLeft"])
    assert min(blinks[BLINK, "original"]) > 0.5, blinks  # the visitor blinks
    assert max(blinks[OPEN, "original"]) < 0.1, blinks
    open_right, open_left = blinks[OPEN, "swapped"]
    right, left = blinks[BLINK, "swapped"]
    # the swapped face blinks as plainly (the old hand-over showed the identity's eye
    # with its drawn iris in a slit: eyeBlinkRight 0.21-0.26)
    assert right > 0.4 and left > 0.4, blinks
    assert right - open_right > 0.25 and left - open_left > 0.25, blinks
