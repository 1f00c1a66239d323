"""478-point face landmarks (MediaPipe FaceLandmarker v2) from a rotated face crop."""

from __future__ import annotations

import logging
import math

import cv2
import numpy as np
import numpy.typing as npt

from appliance.inference.base import Model
from appliance.vision.roi import crop_to_image
from appliance.vision.types import FaceLandmarks, FloatArray, Roi

logger = logging.getLogger(__name__)

NUM_LANDMARKS = 478
PRESENCE_THRESHOLD = 0.5


class LandmarkModel:
    """Runs the landmark model on the crop an ROI selects and maps points back to the image."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.input_size = int(model.inputs[0].shape[1])
        sizes = [int(np.prod(o.shape)) for o in model.outputs]
        if NUM_LANDMARKS * 3 not in sizes:
            raise ValueError(f"{model.path.name} does not output {NUM_LANDMARKS} landmarks")
        self._points_index = sizes.index(NUM_LANDMARKS * 3)
        self._presence_index = next(
            i for i, o in enumerate(model.outputs) if o.shape == (1, 1, 1, 1)
        )

    def crop(self, image: npt.NDArray[np.uint8], roi: Roi) -> tuple[FloatArray, FloatArray]:
        """The model input (1, S, S, 3) RGB in [0, 1] and the crop-to-image affine."""
        return crop_input(image, roi, self.input_size)

    def run(self, image: npt.NDArray[np.uint8], roi: Roi) -> FaceLandmarks:
        tensor, _ = self.crop(image, roi)
        outputs = self.model.run([tensor])
        raw = outputs[self._points_index].reshape(NUM_LANDMARKS, 3)
        logit = float(outputs[self._presence_index].reshape(-1)[0])
        points = crop_points(raw, roi, self.input_size)
        return FaceLandmarks(points=points, presence=presence_of(logit), roi=roi)


def presence_of(logit: float) -> float:
    """A presence logit as a probability (clamped: no overflow)."""
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))


def crop_input(
    image: npt.NDArray[np.uint8], roi: Roi, size: int, mirror: bool = False
) -> tuple[FloatArray, FloatArray]:
    """A landmark model's input (1, size, size, 3): RGB in [0, 1] from the rotated square
    ``roi`` (mirrored left to right with ``mirror``); and the crop-to-image affine."""
    matrix = crop_to_image(roi, size)
    patch = cv2.warpAffine(
        image,
        matrix,
        (size, size),
        flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
        borderMode=cv2.BORDER_CONSTANT,
    )
    if mirror:
        patch = cv2.flip(patch, 1)
    rgb = cv2.cvtColor(patch, cv2.COLOR_BGR2RGB).astype(np.float32) * (1.0 / 255.0)
    return rgb[None], matrix.astype(np.float32)


def crop_points(raw: FloatArray, roi: Roi, size: int, mirror: bool = False) -> FloatArray:
    """A model's points (N, 3) in crop pixels (of a ``crop_input`` crop) in image pixels;
    z scaled like x."""
    if mirror:
        raw = raw.copy()
        raw[:, 0] = size - raw[:, 0]
    matrix = crop_to_image(roi, size).astype(np.float32)
    points = np.empty_like(raw)
    points[:, :2] = raw[:, :2] @ matrix[:, :2].T + matrix[:, 2]
    points[:, 2] = raw[:, 2] * (roi.size / size)
    return points
