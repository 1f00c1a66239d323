"""The swapped face's fine detail stays inside ``mirror eval``'s 0.5-1.6 of the face it
replaces (issue 14): on the sharp talking-man clip the visitor's grain may make up
more of what a soft photo lacks (the painting read 0.45 in ``mirror eval``), and a
photo sharper than the frame is softened (Dylan's grainy portrait read 1.98 on
expressive_woman_long).

Real models, the real processor, the shared photos and clips.
"""

from __future__ import annotations

import numpy as np
import pytest

from appliance.config import Settings
from appliance.eval import artefacts
from appliance.eval.regions import crop_box, face_mask
from appliance.media.frames import Frame
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_processor
from appliance.vision.analyzer import FaceAnalyzer
from tests.conftest import media_frames, shared_media

FRAMES = 60
LAST = 40  # the figure: the mean of the last frames (the gains are eased from the first)


def _detail(store: ModelStore, analyzer: FaceAnalyzer, photo: str, clip: str) -> float:
    processor = build_processor(
        Settings(), store, str(shared_media(photo)), analyzer=analyzer, max_faces=1
    )
    ratios = []
    for index, image in enumerate(media_frames(clip, FRAMES)):
        frame = processor.process(
            Frame(image=image.copy(), index=index, capture_ns=index * 40_000_000)
        )
        if index < FRAMES - LAST:
            continue
        points = analyzer.analyze(image, refine=True)[0].points
        x0, y0, x1, y1 = crop_box(points, 0, image.shape)
        mask = face_mask(image.shape, points)
        lx0, ly0, lx1, ly1 = processor.labeler.region(image.shape)
        mask[ly0:ly1, lx0:lx1] = 0  # the AI label's letters are not the face's detail
        mask = mask[y0:y1, x0:x1]
        ratio = artefacts.detail_ratio(image[y0:y1, x0:x1], frame.image[y0:y1, x0:x1], mask)
        assert ratio is not None
        ratios.append(ratio)
    return float(np.mean(ratios))


@pytest.mark.parametrize(
    ("photo", "clip", "bounds"),
    [
        # 0.48 with at most 0.3 of the visitor's grain (0.52 now)
        ("painting_seated_woman.jpg", "talking_man_greenscreen.mp4", (0.5, 1.6)),
        # 1.94 unsoftened (1.50 now)
        ("portrait_dylan_bw.jpg", "expressive_woman_long.mp4", (0.5, 1.6)),
    ],
    ids=["soft-photo-sharp-clip", "sharp-photo-soft-clip"],
)
def test_swapped_detail_is_near_the_frames(
    store: ModelStore, analyzer: FaceAnalyzer, photo: str, clip: str, bounds: tuple[float, float]
) -> None:
    ratio = _detail(store, analyzer, photo, clip)
    assert bounds[0] <= ratio <= bounds[1], ratio
