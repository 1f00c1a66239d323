"""LiteRT with the Coral Edge TPU delegate, falling back to the CPU model with the reason.

For ``face_detector.tflite`` the TPU runs ``face_detector_edgetpu.tflite`` (the
file ``edgetpu_compiler`` writes) through ``load_delegate('libedgetpu.so.1')``,
or through Google's PyCoral ``make_interpreter`` when that is installed on the
device (the PyPI package named ``pycoral`` is an unrelated project, so PyCoral
is recognised by its ``make_interpreter`` and ``list_edge_tpus``). With no
library, no TPU plugged in or no compiled variant, the CPU model runs on
``cpu_fallback`` and the reason is recorded with ``record_fallback``; where the
library and the compiled models come from is in ``edgetpu_parts``.

libedgetpu 16.0 may segfault with a newer LiteRT, which no ``except`` can
catch: this process neither loads the delegate nor imports PyCoral before a
child process has (``edgetpu_probe``). ``probe()`` looks for the library
without opening it, then a child loads the delegate; ``load()`` has a child
invoke each compiled model once before this process builds its interpreter. A
crash, an error or a hang there is a fallback to the CPU model with the reason.
"""

from __future__ import annotations

import ctypes
import importlib
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from appliance.backend_names import EDGETPU
from appliance.inference.base import Backend, Model, SpecModel, TensorSpec
from appliance.inference.edgetpu_parts import (
    EDGETPU_LIBRARY,
    EDGETPU_SUFFIX,
    edgetpu_variant,
    library_missing,
    library_path,
    variant_missing,
)
from appliance.inference.edgetpu_probe import (
    PROBE_TIMEOUT_S,
    delegate_fails,
    first_invoke_fails,
)
from appliance.inference.fallbacks import record_fallback
from appliance.inference.litert import LiteRTBackend

logger = logging.getLogger(__name__)

__all__ = ["EDGETPU_LIBRARY", "EDGETPU_SUFFIX", "EdgeTpuBackend", "EdgeTpuModel", "edgetpu_variant"]

DelegateLoader = Callable[[str], Any]


def litert_delegate(library: str) -> Any:
    """The real loader: the library must open, then LiteRT must start the TPU with it.

    Opening the library first keeps the reason plain when it is not installed
    (and avoids a noisy destructor in LiteRT's ``Delegate`` on that path).
    """
    ctypes.CDLL(library)
    from ai_edge_litert.interpreter import load_delegate

    return load_delegate(library)


def pycoral_edgetpu() -> Any | None:
    """Google's ``pycoral.utils.edgetpu`` when installed, else ``None``."""
    try:
        module = importlib.import_module("pycoral.utils.edgetpu")
    except ImportError:
        return None
    if not (hasattr(module, "make_interpreter") and hasattr(module, "list_edge_tpus")):
        return None
    return module


def _quantize(value: npt.NDArray[np.float32], detail: dict[str, Any]) -> npt.NDArray[Any]:
    dtype = np.dtype(detail["dtype"])
    if dtype.kind == "f":
        return np.ascontiguousarray(value, dtype=dtype)
    scale, zero = detail["quantization"]
    info = np.iinfo(dtype)
    q = np.round(value / (scale or 1.0) + zero)
    quantized: npt.NDArray[Any] = np.clip(q, info.min, info.max).astype(dtype)
    return quantized


def _dequantize(value: npt.NDArray[Any], detail: dict[str, Any]) -> npt.NDArray[np.float32]:
    if np.dtype(detail["dtype"]).kind == "f":
        return np.asarray(value, dtype=np.float32)
    scale, zero = detail["quantization"]
    real: npt.NDArray[np.float32] = ((value.astype(np.float32) - zero) * (scale or 1.0)).astype(
        np.float32
    )
    return real


class EdgeTpuModel(SpecModel):
    """An interpreter running on the TPU: float feeds are quantised in, outputs dequantised."""

    backend_name: str = EDGETPU

    def __init__(self, path: Path, interpreter: Any) -> None:
        self.path = path
        self._interp = interpreter
        self._interp.allocate_tensors()
        self._in = list(self._interp.get_input_details())
        self._out = list(self._interp.get_output_details())
        self._inputs = tuple(self._spec(d) for d in self._in)
        self._outputs = tuple(self._spec(d) for d in self._out)
        self._lock = threading.Lock()

    @staticmethod
    def _spec(detail: dict[str, Any]) -> TensorSpec:
        shape = tuple(int(d) for d in detail["shape"])
        return TensorSpec(str(detail["name"]), shape, np.dtype(detail["dtype"]).name)

    def run(self, feeds: Sequence[npt.NDArray[np.float32]]) -> list[npt.NDArray[np.float32]]:
        self._check(feeds)
        with self._lock:
            for detail, value in zip(self._in, feeds, strict=True):
                self._interp.set_tensor(int(detail["index"]), _quantize(value, detail))
            self._interp.invoke()
            return [_dequantize(self._interp.get_tensor(int(d["index"])), d) for d in self._out]

    def close(self) -> None:
        self._interp = None


class EdgeTpuBackend:
    """Runs ``<model>_edgetpu.tflite`` on the TPU, or the CPU model with the reason recorded."""

    name: str = EDGETPU
    model_suffix = ".tflite"

    def __init__(
        self,
        delegate_loader: DelegateLoader | None = None,
        cpu_fallback: Backend | None = None,
        library: str = EDGETPU_LIBRARY,
        *,
        probe_command: Sequence[str] | None = None,
        probe_timeout_s: float = PROBE_TIMEOUT_S,
    ) -> None:
        self.library = library
        self.cpu_fallback: Backend = cpu_fallback or LiteRTBackend()
        self._loader = delegate_loader  # this process's, used once a child's invoke worked
        self._delegate: Any = None  # loaded in this process only after a child's first invoke
        self._probe_command = probe_command  # None: python -m appliance.inference.edgetpu_probe
        self._probe_timeout_s = probe_timeout_s
        self._tpu_in_use = False
        self._reason: str | None = None
        self._probed = False
        self._lock = threading.Lock()

    def probe(self) -> str | None:
        """``None`` when a TPU answers, else why not (cached: the TPU is probed once)."""
        with self._lock:
            if not self._probed:
                self._probed = True
                self._reason = self._probe()
            return self._reason

    def _probe(self) -> str | None:
        """The library is looked for (not opened); a child loads the delegate from it."""
        if library_path(self.library) is None:
            return library_missing(self.library)
        return delegate_fails(
            self.library, command=self._probe_command, timeout_s=self._probe_timeout_s
        )

    def load(self, path: Path) -> Model:
        variant = edgetpu_variant(path)
        reason = self.probe()
        if reason is None and not variant.is_file():
            reason = variant_missing(variant)
        if reason is None and not self._tpu_in_use:
            # Before this process touches the TPU: once a model runs on it here, a child may not
            # get the TPU, and a first invoke has already worked in this process.
            reason = first_invoke_fails(
                variant, self.library, command=self._probe_command, timeout_s=self._probe_timeout_s
            )
        if reason is None:
            try:
                model = EdgeTpuModel(variant, self._interpreter(variant))
                self._tpu_in_use = True
                return model
            except (ValueError, RuntimeError, OSError) as exc:
                reason = f"Edge TPU cannot load {variant.name}: {exc}"
        record_fallback(path.name, self.name, self.cpu_fallback.name, reason)
        return self.cpu_fallback.load(path)

    def _interpreter(self, variant: Path) -> Any:
        """Only once a child invoked a compiled model on the TPU (see ``load``)."""
        pycoral = None if self._loader is not None else pycoral_edgetpu()
        if pycoral is not None:
            return pycoral.make_interpreter(str(variant))
        from ai_edge_litert.interpreter import Interpreter

        if self._delegate is None:
            self._delegate = (self._loader or litert_delegate)(self.library)
        return Interpreter(model_path=str(variant), experimental_delegates=[self._delegate])
