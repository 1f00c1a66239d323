"""SSD anchors of the BlazeFace detectors (MediaPipe's SsdAnchorsCalculator, fixed size)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class AnchorSpec:
    input_size: int
    strides: tuple[int, ...]
    anchors_per_layer: int  # anchors per cell contributed by each layer
    score_threshold: float


SHORT_RANGE = AnchorSpec(
    input_size=128, strides=(8, 16, 16, 16), anchors_per_layer=2, score_threshold=0.5
)
FULL_RANGE = AnchorSpec(input_size=192, strides=(4,), anchors_per_layer=1, score_threshold=0.6)


def make_anchors(spec: AnchorSpec) -> npt.NDArray[np.float32]:
    """Anchor centres (N, 2) in [0, 1]; layers of equal stride share one grid."""
    centres: list[npt.NDArray[np.float32]] = []
    layer = 0
    while layer < len(spec.strides):
        stride = spec.strides[layer]
        same = 0
        while layer < len(spec.strides) and spec.strides[layer] == stride:
            same += 1
            layer += 1
        cells = int(np.ceil(spec.input_size / stride))
        grid = (np.arange(cells, dtype=np.float32) + 0.5) / cells
        ys, xs = np.meshgrid(grid, grid, indexing="ij")
        cell_centres = np.stack([xs.ravel(), ys.ravel()], axis=1)
        centres.append(np.repeat(cell_centres, same * spec.anchors_per_layer, axis=0))
    return np.concatenate(centres).astype(np.float32)
