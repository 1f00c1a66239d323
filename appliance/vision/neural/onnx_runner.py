"""A minimal onnxruntime CPU backend (the ``Backend`` protocol) for the neural swappers.

The neural swapper accepts any ``Backend``; this one is the default so the
neural path runs wherever onnxruntime is installed, with no provider choice
(fp32 on the CPU: it is also the fallback when an fp16 engine misbehaves).
Dynamic tensor dimensions are reported as -1.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from appliance.errors import BackendError, MissingExtraError
from appliance.inference.base import Model, SpecModel, TensorSpec

logger = logging.getLogger(__name__)

_PROVIDER = "CPUExecutionProvider"


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _spec(arg: Any) -> TensorSpec:
    shape = tuple(d if isinstance(d, int) else -1 for d in (arg.shape or ()))
    return TensorSpec(str(arg.name), shape, str(arg.type))


class OnnxCpuModel(SpecModel):
    """One onnxruntime session on the CPU provider."""

    backend_name = "onnxruntime-cpu"

    def __init__(self, path: Path, session: Any) -> None:
        self.path = path
        self._session = session
        self._inputs = tuple(_spec(a) for a in session.get_inputs())
        self._outputs = tuple(_spec(a) for a in session.get_outputs())

    def run(self, feeds: Sequence[npt.NDArray[np.float32]]) -> list[npt.NDArray[np.float32]]:
        named = {s.name: np.ascontiguousarray(x) for s, x in zip(self._inputs, feeds, strict=True)}
        try:
            result = self._session.run(None, named)
        except Exception as exc:  # onnxruntime raises its own, untyped exceptions
            raise BackendError(
                f"{self.path.name}: onnxruntime run failed: {_first_line(exc)}"
            ) from exc
        return [np.asarray(r, np.float32) for r in result]

    def close(self) -> None:
        self._session = None


class OnnxCpuBackend:
    """Loads ONNX files into onnxruntime CPU sessions (fp32)."""

    name = "onnxruntime-cpu"

    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads

    def load(self, path: Path) -> Model:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise MissingExtraError(
                "the neural swappers need onnxruntime: pip install onnxruntime"
            ) from exc
        options = ort.SessionOptions()
        options.log_severity_level = 3
        if self.threads:
            options.intra_op_num_threads = self.threads
        try:
            session = ort.InferenceSession(str(path), options, providers=[_PROVIDER])
        except Exception as exc:  # InvalidGraph, NoSuchFile, Fail: all untyped here
            raise BackendError(
                f"{path.name}: onnxruntime cannot load it: {_first_line(exc)}"
            ) from exc
        logger.info("loaded %s on %s", path.name, _PROVIDER)
        return OnnxCpuModel(Path(path), session)
