"""Check a loaded model against its contract: input names and shapes, one clear error."""

from __future__ import annotations

import logging

from appliance.errors import ModelError
from appliance.inference.base import Model, TensorSpec

logger = logging.getLogger(__name__)


def input_index(model: Model, name: str, shape: tuple[int, ...], what: str) -> int:
    """The position of input ``name`` in ``model.inputs``, its shape checked."""
    for index, spec in enumerate(model.inputs):
        if spec.name == name:
            check_shape(spec, shape, what)
            return index
    names = ", ".join(s.name for s in model.inputs) or "none"
    raise ModelError(f"{what}: {model.path.name} has no input {name!r} (inputs: {names})")


def check_shape(spec: TensorSpec, shape: tuple[int, ...], what: str) -> None:
    """``spec.shape`` matches ``shape``; -1 (dynamic) on either side matches anything."""
    ok = len(spec.shape) == len(shape) and all(
        a == b or a < 0 or b < 0 for a, b in zip(spec.shape, shape, strict=True)
    )
    if not ok:
        raise ModelError(
            f"{what}: tensor {spec.name!r} has shape {list(spec.shape)}, expected {list(shape)}"
        )


def single_input(model: Model, shape: tuple[int, ...], what: str) -> None:
    if len(model.inputs) != 1:
        raise ModelError(f"{what}: {model.path.name} has {len(model.inputs)} inputs, expected 1")
    check_shape(model.inputs[0], shape, what)
