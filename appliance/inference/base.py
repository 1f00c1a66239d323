"""The backend protocol: load a model, describe its tensors, run it.

Kept deliberately narrow so onnxruntime (TensorRT/CUDA/CPU) and LiteRT with
the Edge TPU delegate fit behind it unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from appliance.errors import BackendError


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str


class Model(Protocol):
    """A loaded model. ``run`` takes inputs in ``inputs`` order."""

    path: Path
    backend_name: str

    @property
    def inputs(self) -> tuple[TensorSpec, ...]: ...

    @property
    def outputs(self) -> tuple[TensorSpec, ...]: ...

    def run(self, feeds: Sequence[npt.NDArray[np.float32]]) -> list[npt.NDArray[np.float32]]: ...

    def close(self) -> None: ...


def check_feeds(
    model: str, specs: Sequence[TensorSpec], feeds: Sequence[npt.NDArray[np.float32]]
) -> None:
    """Raise ``BackendError`` unless ``feeds`` match ``specs`` in count and shape.

    A negative dimension in a spec (a dynamic axis) accepts any size.
    """
    if len(feeds) != len(specs):
        raise BackendError(f"{model}: expected {len(specs)} inputs, got {len(feeds)}")
    for spec, value in zip(specs, feeds, strict=True):
        wanted = tuple(d if d >= 0 else s for d, s in zip(spec.shape, value.shape, strict=False))
        if tuple(value.shape) != wanted:
            raise BackendError(
                f"{model}: input {spec.name} wants shape {spec.shape}, got {value.shape}"
            )


class SpecModel:
    """The tensor descriptions every backend's model exposes, kept in ``_inputs``/``_outputs``."""

    path: Path
    _inputs: tuple[TensorSpec, ...] = ()
    _outputs: tuple[TensorSpec, ...] = ()

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return self._inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return self._outputs

    def _check(self, feeds: Sequence[npt.NDArray[np.float32]]) -> None:
        check_feeds(self.path.name, self._inputs, feeds)


@runtime_checkable
class Threaded(Protocol):
    """A model that can be loaded again on an interpreter with more threads (LiteRT)."""

    def with_threads(self, num_threads: int) -> Model: ...


class Backend(Protocol):
    name: str

    def load(self, path: Path) -> Model: ...
