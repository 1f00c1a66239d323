"""One swapper network run on an aligned crop: scale in, check, scale out.

``swap_crop`` takes the BGR crop and the identity's ``source`` tensor and
returns the swapped BGR crop, or raises ``BadOutputError`` (NaN, flat) so
the swapper can fall back.
"""

from __future__ import annotations

import logging

import numpy as np
import numpy.typing as npt

from appliance.errors import ModelError
from appliance.inference.base import Model
from appliance.vision.neural.contract import check_shape, input_index
from appliance.vision.neural.output_check import BadOutputError, output_problem
from appliance.vision.neural.specs import (
    EMBEDDING_SIZE,
    SOURCE_INPUT,
    TARGET_INPUT,
    SwapperSpec,
)
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

Image = npt.NDArray[np.uint8]


class Generator:
    """A loaded swapper model with its contract checked; ``label`` names it in fallbacks."""

    def __init__(self, model: Model, spec: SwapperSpec, label: str) -> None:
        size = spec.size
        self._target = input_index(model, TARGET_INPUT, (1, 3, size, size), spec.name)
        self._source = input_index(model, SOURCE_INPUT, (1, EMBEDDING_SIZE), spec.name)
        if len(model.inputs) != 2 or len(model.outputs) != 1:
            raise _contract_error(model, spec)
        check_shape(model.outputs[0], (1, 3, size, size), spec.name)
        self.model = model
        self.spec = spec
        self.label = label
        self._mean = np.array(spec.mean, np.float32)[:, None, None]
        self._std = np.array(spec.std, np.float32)[:, None, None]

    def blob(self, crop: Image) -> FloatArray:
        """A BGR crop as the ``target`` tensor: RGB, x / 255, then (x - mean) / std."""
        rgb = crop[:, :, ::-1].astype(np.float32).transpose(2, 0, 1) * (1.0 / 255.0)
        out: FloatArray = np.ascontiguousarray(((rgb - self._mean) / self._std)[None])
        return out

    def swap_crop(self, crop: Image, source: FloatArray) -> Image:
        feeds: list[FloatArray] = [np.empty(0, np.float32)] * 2
        feeds[self._target] = self.blob(crop)
        feeds[self._source] = source
        raw = self.model.run(feeds)[0]
        problem = output_problem(raw)
        if problem is not None:
            raise BadOutputError(f"{self.label}: {problem}")
        rgb = raw.reshape(3, self.spec.size, self.spec.size)
        if self.spec.output_signed:
            rgb = rgb * 0.5 + 0.5
        bgr = np.clip(rgb[::-1].transpose(1, 2, 0) * 255.0 + 0.5, 0, 255)
        out: Image = np.ascontiguousarray(bgr.astype(np.uint8))
        return out


def _contract_error(model: Model, spec: SwapperSpec) -> ModelError:
    return ModelError(
        f"{spec.name}: {model.path.name} has {len(model.inputs)} inputs and "
        f"{len(model.outputs)} outputs, expected 2 ({TARGET_INPUT}, {SOURCE_INPUT}) and 1"
    )
