"""One set of thumbnails per face for the colour match and the relight (issue 17).

The colour statistics and the relight's low-frequency shading both look at
the face through small copies; they now share one pair (``face_thumbs``)
instead of each scaling the full-size face down again (1.1 ms of 12.3 per
swap at 640x480, measured with a swap benchmark, not here). What they
compute from the shared thumbnails is what they computed from the full images.
"""

from __future__ import annotations

import cv2
import numpy as np

from appliance.eval.regions import crop_box, face_mask
from appliance.vision import relight
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.blend import face_thumbs, match_colour


def _face(analyzer: FaceAnalyzer, image: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    points = analyzer.analyze(image)[0].points
    x0, y0, x1, y1 = crop_box(points, 0, image.shape)
    roi = np.ascontiguousarray(image[y0:y1, x0:x1])
    return roi, face_mask(image.shape, points)[y0:y1, x0:x1], float(y1 - y0)


def test_colour_and_light_from_shared_thumbnails_match_the_full_images(
    analyzer: FaceAnalyzer, astronaut: np.ndarray, grace_hopper: np.ndarray
) -> None:
    visitor, mask, face_px = _face(analyzer, astronaut)
    size = (visitor.shape[1], visitor.shape[0])
    other, _, _ = _face(analyzer, grace_hopper)
    warped = np.asarray(cv2.resize(other, size), np.uint8)
    ramp = np.linspace(0.5, 1.0, size[0], dtype=np.float32)[None, :, None]
    lit = np.clip(visitor * ramp, 0, 255).astype(np.uint8)  # a lamp on one side

    thumbs = face_thumbs(warped, lit, mask)
    assert max(thumbs.visitor.shape[:2]) <= 96 < max(visitor.shape[:2])
    shared = match_colour(warped, lit, mask, thumbs=thumbs)
    alone = match_colour(warped, lit, mask)
    assert np.array_equal(shared, alone)
    # the recoloured thumbnail stands for the recoloured face
    again = face_thumbs(alone, lit, mask).warped.astype(np.int16)
    assert np.abs(thumbs.warped.astype(np.int16) - again).mean() < 1.0

    full = relight.shading_gain(alone, lit, mask, face_px)
    small = relight.shading_gain(thumbs.warped, thumbs.visitor, mask, face_px)
    assert full is not None and small is not None
    inside = mask > 127
    assert float(np.abs(full - small)[inside].mean()) < 0.01
    assert float(np.abs(full - 1.0)[inside].mean()) > 0.05  # the lamp does change the light
