"""The memory a swap helper process shares with the mirror for a face's box (issue 17).

The box used to go over the helper's socket both ways, pickled. Now only a few
numbers go over the socket, and the pixels are in an anonymous file both
processes map.
"""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from appliance.config import SwapSettings
from appliance.pipeline.shared_box import GROW_STEP, SharedBox, SharedBoxError
from appliance.pipeline.swap_helper import SwapJob
from appliance.vision.blend import ColourMemory
from appliance.vision.types import FaceLandmarks, Roi


def test_the_other_side_sees_the_box_and_maps_it_again_once_it_grew() -> None:
    ours = SharedBox.create("test-box")
    theirs = SharedBox.attach(os.dup(ours.fd))  # as the helper gets it, another fd
    try:
        small = np.arange(40 * 30 * 3, dtype=np.uint32).astype(np.uint8).reshape(40, 30, 3)
        np.copyto(ours.view(small.shape), small)
        assert os.fstat(ours.fd).st_size == GROW_STEP  # whole MiB
        seen = theirs.view(small.shape)
        assert np.array_equal(seen, small)
        seen[0, 0] = (1, 2, 3)  # the helper swaps in place
        assert tuple(ours.view(small.shape)[0, 0]) == (1, 2, 3)
        del seen
        # a box of a near face at 1280x720: more than the file had
        big = np.full((700, 600, 3), 7, np.uint8)
        np.copyto(ours.view(big.shape), big)
        assert os.fstat(ours.fd).st_size == 2 * GROW_STEP
        assert np.array_equal(theirs.view(big.shape), big)
    finally:
        ours.close()
        theirs.close()


def test_the_helper_side_never_grows_the_file() -> None:
    ours = SharedBox.create("test-box")
    theirs = SharedBox.attach(os.dup(ours.fd))
    try:
        ours.view((10, 10, 3))
        with pytest.raises(SharedBoxError, match="a job needs"):
            theirs.view((1000, 1000, 3))
        assert os.fstat(ours.fd).st_size == GROW_STEP
    finally:
        ours.close()
        theirs.close()
        ours.close()  # a second close does nothing (the fd number may be reused)


def test_a_job_carries_no_pixels() -> None:
    """What goes over the socket for a face: its landmarks and settings, a few KiB
    whatever the box's size (it was the box itself too: 120 KiB and more)."""
    points = np.zeros((478, 3), np.float32)
    face = FaceLandmarks(points, 1.0, Roi(100.0, 100.0, 200.0, 0.0))
    job = SwapJob(
        1, SwapSettings(), (400, 300, 3), face, 1.0, points.copy(), ColourMemory(), (0.0, 0.0)
    )
    assert len(pickle.dumps(job)) < 16 * 1024
