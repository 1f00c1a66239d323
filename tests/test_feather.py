"""The blend's feathered alpha (appliance.vision.blend.feather) falls to about 0 at the
mask's edge: eroded by half its width, it was 15-25% there (a step of 20 grey levels
where Grace Hopper's dark forehead top met the visitor's: a band across the forehead)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from appliance.vision.blend import feather


@pytest.mark.parametrize(("radius", "width"), [(150, 27), (60, 10), (300, 50)])
def test_the_feather_has_no_step_at_the_edge(radius: int, width: int) -> None:
    size = 2 * radius + 40
    mask = np.zeros((size, size), np.uint8)
    cv2.circle(mask, (size // 2, size // 2), radius, 255, -1)
    alpha = feather(mask, width)
    edge = (mask > 0) & (cv2.erode(mask, np.ones((3, 3), np.uint8)) == 0)
    assert float(alpha[edge].mean()) < 0.05 * 255, float(alpha[edge].mean())
    assert int(alpha[mask == 0].max()) == 0
    inside = cv2.erode(mask, np.ones((4 * width + 1, 4 * width + 1), np.uint8)) > 0
    assert int(alpha[inside].min()) >= 250  # the face itself is opaque
