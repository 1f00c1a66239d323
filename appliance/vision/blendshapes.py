"""52 blendshape scores from the 146 selected landmarks (MediaPipe face_blendshapes)."""

from __future__ import annotations

import logging

import numpy as np

from appliance.errors import ModelHashError, ModelMissingError
from appliance.inference.base import Backend, Model
from appliance.modelstore import ModelStore
from appliance.vision.mesh import BLENDSHAPE_LANDMARKS, BLENDSHAPE_NAMES
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

_INDEX = np.array(BLENDSHAPE_LANDMARKS)
MODEL = "face_blendshapes"


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


class LazyBlendshapes:
    """The store's blendshape model, loaded on first use (an identity's held expression
    at enrolment; a new visitor's first look in the processor). Without the model file
    no scores are read, and the log says why once."""

    def __init__(self, store: ModelStore, backend: Backend) -> None:
        self.store = store
        self.backend = backend
        self._model: BlendshapeModel | None = None
        self._missing = False

    def load(self) -> BlendshapeModel | None:
        if self._model is None and not self._missing:
            try:
                self._model = BlendshapeModel(self.backend.load(self.store.path(MODEL)))
            except (ModelMissingError, ModelHashError) as exc:
                logger.warning("identity expressions are not read: %s", exc)
                self._missing = True
        return self._model
