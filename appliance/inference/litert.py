"""LiteRT (TensorFlow Lite) CPU backend."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from appliance.backend_names import LITERT_CPU
from appliance.errors import BackendError
from appliance.inference.base import SpecModel, TensorSpec
from appliance.inference.spread import Spread, started_by

logger = logging.getLogger(__name__)


def _spec(detail: dict[str, Any]) -> TensorSpec:
    return TensorSpec(
        name=str(detail["name"]),
        shape=tuple(int(d) for d in detail["shape"]),
        dtype=np.dtype(detail["dtype"]).name,
    )


class LiteRTModel(SpecModel):
    """One interpreter; ``run`` is serialised because interpreters are not re-entrant.

    With ``num_threads`` above one, the worker threads the interpreter starts are
    kept off the caller's CPU at each run (``spread``)."""

    backend_name: str = LITERT_CPU

    def __init__(self, path: Path, num_threads: int = 1) -> None:
        try:
            from ai_edge_litert.interpreter import Interpreter
        except ImportError as exc:  # pragma: no cover - dependency of the package
            raise BackendError(
                f"LiteRT is not installed ({exc}); pip install ai-edge-litert"
            ) from exc
        self.path = path
        self.num_threads = num_threads
        try:
            self._interp = Interpreter(model_path=str(path), num_threads=num_threads)
            # the worker threads start here (the XNNPACK delegate's pool)
            _, workers = started_by(self._interp.allocate_tensors, num_threads - 1)
        except (ValueError, RuntimeError) as exc:
            raise BackendError(f"LiteRT cannot load {path}: {exc}") from exc
        self._spread = Spread(workers)
        in_details = self._interp.get_input_details()
        out_details = self._interp.get_output_details()
        self._in_idx = [int(d["index"]) for d in in_details]
        self._out_idx = [int(d["index"]) for d in out_details]
        self._inputs = tuple(_spec(d) for d in in_details)
        self._outputs = tuple(_spec(d) for d in out_details)
        self._lock = threading.Lock()

    def run(self, feeds: Sequence[npt.NDArray[np.float32]]) -> list[npt.NDArray[np.float32]]:
        self._check(feeds)
        with self._lock:
            self._spread.before_run()
            for idx, value in zip(self._in_idx, feeds, strict=True):
                self._interp.set_tensor(idx, np.ascontiguousarray(value, dtype=np.float32))
            self._interp.invoke()
            return [np.array(self._interp.get_tensor(idx)) for idx in self._out_idx]

    def with_threads(self, num_threads: int) -> LiteRTModel:
        """The same model on another interpreter running ``num_threads`` threads."""
        return LiteRTModel(self.path, num_threads)

    def close(self) -> None:
        self._spread = Spread([])  # its threads end with the interpreter
        self._interp = None


class LiteRTBackend:
    name: str = LITERT_CPU

    def __init__(self, num_threads: int = 1) -> None:
        self.num_threads = num_threads

    def load(self, path: Path) -> LiteRTModel:
        logger.debug("loading %s with LiteRT (%d threads)", path, self.num_threads)
        return LiteRTModel(path, self.num_threads)
