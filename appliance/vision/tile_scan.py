"""Small faces: the full-range detector run over overlapping tiles, a few per detection.

A face of 30-60 px (a visitor 2-3 m from a 720p camera) is 3-6 px once a
whole frame is squeezed into the short-range detector's 128 px input: too
small to find. Run on a tile of ``tile_px`` pixels, the full-range model
(192 px input, anchors every 4 px) sees such a face at 15-30 px and finds it.

A frame is covered by a grid of square tiles overlapping by ``overlap`` (a
face up to that share of a tile lies whole in one of them). A 1280x720
frame needs 15 tiles of 384 px, too many for one frame's budget, so each
``detect_next`` runs only the next ``per_call`` tiles in turn: the scan
sweeps the frame over a few detection frames, and the cost per detection
frame stays that of ``per_call`` small inferences. Faces found in two
overlapping tiles are merged (the higher score kept).
"""

from __future__ import annotations

import logging
import math

import numpy as np
import numpy.typing as npt

from appliance.errors import ConfigError
from appliance.vision.detector import FaceDetector, Prepared
from appliance.vision.types import Detection

logger = logging.getLogger(__name__)

TILE_PX = 384
OVERLAP = 0.25
PER_CALL = 3
MERGE_IOU = 0.3

Tile = tuple[int, int, int]  # x, y, side
PreparedTile = tuple[int, int, Prepared]  # x, y, the tile's model input
Box = tuple[float, float, float, float]


def tile_grid(
    size: tuple[int, int], tile_px: int = TILE_PX, overlap: float = OVERLAP
) -> list[Tile]:
    """The tiles (x, y, side) covering an image of ``size`` (w, h), row by row.

    An image no larger than one tile gives no tiles: the whole-frame pass
    already sees it at the tile's scale or better.
    """
    w, h = size
    if w <= tile_px and h <= tile_px:
        return []
    side = min(tile_px, w, h)
    step = max(1, round(side * (1.0 - overlap)))
    xs = _starts(w, side, step)
    ys = _starts(h, side, step)
    return [(x, y, side) for y in ys for x in xs]


def _starts(length: int, side: int, step: int) -> list[int]:
    if length <= side:
        return [0]
    count = math.ceil((length - side) / step) + 1
    return [round(i * (length - side) / (count - 1)) for i in range(count)]


def box_iou(a: Box, b: Box) -> float:
    """Intersection over union of two (x0, y0, x1, y1) boxes."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union if union > 0 else 0.0


def merge(found: list[Detection], iou: float = MERGE_IOU) -> list[Detection]:
    """``found`` without repeats: of faces overlapping more than ``iou``, the best scored."""
    kept: list[Detection] = []
    for det in sorted(found, key=lambda d: -d.score):
        if all(box_iou(det.box, k.box) <= iou for k in kept):
            kept.append(det)
    return kept


class TileScan:
    """Runs ``detector`` on ``per_call`` tiles of the frame per call, in turn."""

    def __init__(
        self,
        detector: FaceDetector,
        tile_px: int = TILE_PX,
        overlap: float = OVERLAP,
        per_call: int = PER_CALL,
    ) -> None:
        if tile_px < detector.spec.input_size or not 0.0 <= overlap < 0.9 or per_call < 1:
            raise ConfigError(
                f"tile scan needs tiles >= {detector.spec.input_size} px, overlap in [0, 0.9) "
                f"and at least one tile a call, got {tile_px}, {overlap}, {per_call}"
            )
        self.detector = detector
        self.tile_px = tile_px
        self.overlap = overlap
        self.per_call = per_call
        self.tiles_run = 0  # tiles scanned since construction
        self._next = 0
        self._size: tuple[int, int] | None = None
        self._grid: list[Tile] = []

    def grid(self, size: tuple[int, int]) -> list[Tile]:
        """The tiles for frames of ``size`` (w, h); a new size restarts the sweep."""
        if size != self._size:
            self._grid = tile_grid(size, self.tile_px, self.overlap)
            self._size, self._next = size, 0
        return self._grid

    def restart(self) -> None:
        """The next call scans from the first tile (a new scene: a tracker's reset)."""
        self._next = 0

    def detect_next(self, image: npt.NDArray[np.uint8]) -> list[Detection]:
        """Faces in the next ``per_call`` tiles, in image pixels, repeats merged."""
        return self.finish(self.prepare_next(image))

    def prepare_next(self, image: npt.NDArray[np.uint8]) -> list[PreparedTile]:
        """The model inputs of the next ``per_call`` tiles (their own copies: the image
        may change after), the sweep moved on; ``finish`` runs them, on any thread."""
        height, width = image.shape[:2]
        grid = self.grid((width, height))
        tiles: list[PreparedTile] = []
        for _ in range(min(self.per_call, len(grid))):
            x, y, side = grid[self._next]
            self._next = (self._next + 1) % len(grid)
            self.tiles_run += 1
            tiles.append((x, y, self.detector.prepare(image[y : y + side, x : x + side])))
        return tiles

    def finish(
        self, tiles: list[PreparedTile], detector: FaceDetector | None = None
    ) -> list[Detection]:
        """The faces of prepared tiles, in image pixels, repeats merged; ``detector``: the
        same model on another interpreter (a helper thread's), else the scan's own."""
        model = detector or self.detector
        found = [_shifted(det, x, y) for x, y, prepared in tiles for det in model.finish(prepared)]
        return merge(found)


def _shifted(det: Detection, dx: int, dy: int) -> Detection:
    x0, y0, x1, y1 = det.box
    keypoints = det.keypoints + np.array((dx, dy), np.float32)
    return Detection((x0 + dx, y0 + dy, x1 + dx, y1 + dy), keypoints, det.score)
