"""A large face (a 1280x720 close-up: 550-700 px) is swapped at WORK_FACE_PX and scaled
back (appliance.vision.swap_geometric): the identity's texture has at most 512 pixels
for the whole face, so the full-size warp, colour, relight and detail cost by the
pixel (warp 13.2 -> 6.4 ms, detail 8.1 -> 3.1 ms per face at 720p) without adding
detail. The result must match the full-size swap and leave the rest of the frame alone.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from appliance.config import Settings
from appliance.media.frames import Frame
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_processor
from appliance.vision import swap_geometric
from appliance.vision.analyzer import FaceAnalyzer
from tests.conftest import media_frames
from tests.test_swap import face_mask


def _swapped(
    store: ModelStore, analyzer: FaceAnalyzer, frames: list[np.ndarray]
) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """The last frame swapped (after the others) and the label's region."""
    processor = build_processor(Settings(), store, "grace_hopper", analyzer=analyzer)
    out = frames[0]
    for index, image in enumerate(frames):
        frame = processor.process(Frame(image.copy(), index, index * 33_333_333))
        assert frame.swapped
        out = frame.image
    return out, processor.labeler.region(out.shape)


def test_a_large_face_swapped_scaled_matches_the_full_size_swap(
    store: ModelStore, analyzer: FaceAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    frames = [cv2.resize(f, (1024, 1024)) for f in media_frames("expressive_woman.mp4", 4)]
    work_px = swap_geometric.WORK_FACE_PX
    scaled, label = _swapped(store, analyzer, frames)
    monkeypatch.setattr(swap_geometric, "WORK_FACE_PX", 10_000)  # every face at full size
    full, _ = _swapped(store, analyzer, frames)
    last = frames[-1]
    inside = face_mask(analyzer, last, grow_px=0) > 0
    assert float(np.ptp(np.nonzero(inside)[0])) > 1.5 * work_px
    # the frame outside the face (the smoothed mesh may reach 12 px past this frame's
    # own landmarks) and the label: untouched
    outside = face_mask(analyzer, last, grow_px=12) == 0
    x0, y0, x1, y1 = label
    outside[y0:y1, x0:x1] = False
    assert np.array_equal(scaled[outside], last[outside])
    # the face: the same swap, a little softer
    diff = np.abs(scaled.astype(np.int16) - full.astype(np.int16))[inside]
    assert float(diff.mean()) < 2.0, float(diff.mean())  # measured 1.0
    assert np.abs(scaled[inside].astype(np.float32).mean(0) - full[inside].mean(0)).max() < 2.0
