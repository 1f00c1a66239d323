"""52 blendshape scores from the 146 selected landmarks (MediaPipe face_blendshapes)."""

from __future__ import annotations

import numpy as np

from appliance.inference.base import Model
from appliance.vision.mesh import BLENDSHAPE_LANDMARKS, BLENDSHAPE_NAMES
from appliance.vision.types import FloatArray

_INDEX = np.array(BLENDSHAPE_LANDMARKS)


class BlendshapeModel:
    def __init__(self, model: Model) -> None:
        if model.inputs[0].shape != (1, len(BLENDSHAPE_LANDMARKS), 2):
            raise ValueError(f"{model.path.name} is not a 146-point blendshape model")
        self.model = model

    def run(self, points: FloatArray) -> dict[str, float]:
        """Scores by name, from landmarks in image pixels."""
        selected = points[_INDEX, :2].astype(np.float32)[None]
        scores = self.model.run([selected])[0].reshape(-1)
        return {name: float(v) for name, v in zip(BLENDSHAPE_NAMES, scores, strict=True)}
