"""The warp's coarse map (issue 17): cheap for large faces, and right up to the outline.

A large face's source map is computed on a coarse grid (about MAP_CELLS cells
down the face, whatever its size in pixels) and interpolated with each cell's
centre where it was computed. It runs one cell past the mesh, so the pixels
along the face's outline are sampled where the exact (full-resolution) map
samples them, not blended with the "no source" marks outside the mesh; inside,
the interpolated map samples the texture where the exact map does (a mean
difference of 0.5 grey levels at 640x480; 10 when the cells' centres were off
by up to a cell at the far side).
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

import appliance.vision.mesh_warp as mw
import appliance.vision.swap_geometric as sg
from appliance.config import Settings
from appliance.media.frames import Frame
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_processor
from appliance.tools.bench_clips import video_clip
from tests.conftest import shared_media


@pytest.mark.parametrize("size", [(640, 480), (1280, 720)])
def test_coarse_map_matches_the_exact_map_along_the_outline(
    store: ModelStore, size: tuple[int, int]
) -> None:
    processor = build_processor(Settings(), store, "grace_hopper")
    image = video_clip(shared_media("expressive_woman.mp4"), size, 1).decode(0)
    processor.process(Frame(image.copy(), 0, 0))
    face, identity = processor.tracks[0].landmarks, processor.identity
    assert identity is not None
    box = sg._face_box(face.points, image.shape)
    assert box is not None
    x0, y0, x1, y1 = box
    assert min(x1 - x0, y1 - y0) >= mw.MAP_STEP_MIN_PX  # a face the coarse map is used for
    local = face.points.copy()
    local[:, :2] -= (x0, y0)
    roi, size = image[y0:y1, x0:x1], (x1 - x0, y1 - y0)
    face_px = float(np.ptp(local[sg._OVAL, 1]))
    step = mw.map_step(face_px, size)
    assert face_px / step >= mw.MAP_CELLS * 0.8  # about MAP_CELLS cells down the face
    coarse, covered = mw.warp_face(identity, local, step, roi.copy())
    exact, exact_covered = mw.warp_face(identity, local, 1, roi.copy())  # pixel by pixel
    both = ((covered > 0) & (exact_covered > 0)).astype(np.uint8)
    edge = (both > 0) & (cv2.erode(both, np.ones((7, 7), np.uint8)) == 0)
    diff = np.abs(coarse.astype(int) - exact.astype(int)).max(axis=2)
    assert diff[edge].mean() < 10.0, diff[edge].mean()  # 16 (640x480), 21 (720p) without
    # inside, the interpolated map samples the texture where the exact one does
    assert diff[both > 0].mean() < 4.0, diff[both > 0].mean()
