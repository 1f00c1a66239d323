"""A frontal demo photo redrawn with the head turned (the previews' turned visitor)."""

from __future__ import annotations

import numpy as np
import pytest

from appliance.modelstore import ModelStore
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.identity import read_image
from appliance.vision.photo_measures import head_pose
from appliance.vision.turned_view import turned_view


@pytest.mark.parametrize("name", ["astronaut", "grace_hopper"])
def test_the_head_turns_and_the_background_holds_still(
    store: ModelStore, analyzer: FaceAnalyzer, name: str
) -> None:
    photo = read_image(store.path(name))
    points = analyzer.analyze(photo, refine=True)[0].points
    before = head_pose(points).yaw
    yaws = []
    for turn in (-30.0, 30.0):
        view = turned_view(photo, points, turn)
        assert view.shape == photo.shape
        found = analyzer.analyze(view, refine=True)
        assert len(found) == 1
        yaws.append(head_pose(found[0].points).yaw - before)
        # the photo's corners and edges are where they were
        for y, x in ((0, 0), (0, -1), (-1, 0), (-1, -1)):
            assert np.array_equal(view[y, x], photo[y, x])
    assert yaws[0] > 5 and yaws[1] < -5, yaws  # turned both ways, as far as the mesh says
