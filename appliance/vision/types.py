"""Result types of the vision stages."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Detection:
    """A detected face in image pixels."""

    box: tuple[float, float, float, float]  # x0, y0, x1, y1
    keypoints: FloatArray  # (6, 2): right eye, left eye, nose, mouth, right ear, left ear
    score: float

    @property
    def width(self) -> float:
        return self.box[2] - self.box[0]

    @property
    def height(self) -> float:
        return self.box[3] - self.box[1]


@dataclass(frozen=True)
class Roi:
    """A rotated square region: centre and side in pixels, angle in radians."""

    cx: float
    cy: float
    size: float
    angle: float


@dataclass(frozen=True)
class FaceLandmarks:
    """478 landmarks (x, y in image pixels, z in the same scale) and presence in [0, 1]."""

    points: FloatArray  # (478, 3)
    presence: float
    roi: Roi
    light: bool = False  # from the light landmark models (``light_landmarks``)
    # with ``light``: the eye (0: points 468-472, 1: 473-477) whose iris model ran on this
    # frame, the other carried over from the frame before; None: both ran
    fresh_eye: int | None = None
    # with ``light``: FaceMesh v1's own 468 points, before the iris model refined the eyes
    unrefined: FloatArray | None = None
    coasted: bool = False  # no model ran: the face's last landmarks moved on by its motion

    @property
    def xy(self) -> FloatArray:
        return self.points[:, :2]

    def box(self) -> tuple[float, float, float, float]:
        xy = self.points[:468, :2]
        return (
            float(xy[:, 0].min()),
            float(xy[:, 1].min()),
            float(xy[:, 0].max()),
            float(xy[:, 1].max()),
        )
