"""The backend protocol: load a model, describe its tensors, run it.

Kept deliberately narrow so onnxruntime (TensorRT/CUDA/CPU) and LiteRT with
the Edge TPU delegate fit behind it unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt


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


class Backend(Protocol):
    name: str

    def load(self, path: Path) -> Model: ...
