"""Thumbnails: halved by pyrDown, the last step under 2x bilinear (issue 17's speed).

What matters of a thumbnail: it is the area average of the image, near
enough for statistics and masks, and fine stripes do not alias into
false patterns. Speed is the benchmark's to measure, not this test's.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from appliance.vision.thumbnail import thumbnail


@pytest.mark.parametrize("size", [(96, 94), (48, 47), (120, 200), (300, 30)])
def test_a_thumbnail_is_near_the_area_average(astronaut: np.ndarray, size: tuple[int, int]) -> None:
    image = np.ascontiguousarray(astronaut[:350, :340])
    small = thumbnail(image, size)
    assert small.shape == (size[1], size[0], 3) and small.dtype == np.uint8
    area = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    assert np.abs(small.astype(np.int16) - area).mean() < 6.0  # a detailed photo: 2.6 and 4.9


def test_fine_stripes_do_not_alias() -> None:
    stripes = np.zeros((350, 340), np.uint8)
    stripes[:, ::2] = 255  # one-pixel stripes: grey at any smaller size
    small = thumbnail(stripes, (96, 94))
    assert abs(float(small.mean()) - 127.5) < 3 and float(small.std()) < 3
    assert thumbnail(stripes, (340, 350)) is stripes  # nothing to do
