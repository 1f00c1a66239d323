"""onnxruntime backend: TensorRT (fp16, cached engines), then CUDA, then CPU, verified.

The one onnxruntime runner: the detector and landmark variants on the
``tensorrt``, ``cuda`` and ``onnx-cpu`` backends, and the neural swappers'
networks (on the chosen onnxruntime backend or, by default, the CPU).

onnxruntime drops an execution provider it cannot start without raising: the
session simply runs on the next one. So the providers are checked twice: a
provider missing from this onnxruntime build is not asked for at all, and after
the session exists ``session.get_providers()`` is compared with what was asked.
Every provider asked for and not running is recorded with ``record_fallback``.

TensorRT engines and its timing cache live under ``<data dir>/trt-cache/``,
in one folder per model sha256 and TensorRT version, so an engine is never
reused for another model or another TensorRT.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from appliance.backend_names import PROVIDER_CHAINS, PROVIDERS, TENSORRT, ProviderName
from appliance.errors import BackendError, ConfigError
from appliance.inference.base import SpecModel, TensorSpec
from appliance.inference.fallbacks import record_fallback
from appliance.modelstore.hashing import sha256_file
from appliance.paths import data_dir

logger = logging.getLogger(__name__)

_ONNX_DTYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(uint8)": "uint8",
    "tensor(int8)": "int8",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
}
DROPPED_REASON = (
    "onnxruntime dropped it while creating the session (a CUDA, cuDNN or TensorRT "
    "library missing or of the wrong version; onnxruntime's own log says which)"
)

AvailableProviders = Callable[[], Sequence[str]]


def _ort() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise BackendError(
            f"onnxruntime is not installed ({exc}); pip install onnxruntime"
        ) from exc
    return onnxruntime


def available_providers() -> list[str]:
    """The execution providers compiled into this onnxruntime."""
    return [str(p) for p in _ort().get_available_providers()]


def tensorrt_version() -> str:
    """``tensorrt.__version__`` when the Python package is importable, else ``unknown``."""
    try:
        import tensorrt
    except ImportError:
        return "unknown"
    return str(getattr(tensorrt, "__version__", "unknown"))


def trt_cache_dir(model_sha256: str, base: Path | None = None, version: str | None = None) -> Path:
    """``<data dir>/trt-cache/<sha256[:16]>-trt<version>/``: engines never cross models."""
    root = base or data_dir() / "trt-cache"
    return root / f"{model_sha256[:16]}-trt{version or tensorrt_version()}"


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _spec(arg: Any) -> TensorSpec:
    shape = tuple(d if isinstance(d, int) else -1 for d in (arg.shape or ()))
    return TensorSpec(name=str(arg.name), shape=shape, dtype=_ONNX_DTYPES.get(arg.type, arg.type))


def _as_float32(value: Any) -> npt.NDArray[np.float32]:
    """An output as an array, half floats widened (an fp16 network's output) and others as is."""
    out = np.asarray(value)
    return out.astype(np.float32) if out.dtype == np.float16 else out


class OnnxModel(SpecModel):
    """One inference session; ``backend_name`` names the provider that really runs it."""

    def __init__(self, path: Path, session: Any) -> None:
        self.path = path
        self._session = session
        self.providers: tuple[str, ...] = tuple(session.get_providers())
        first = self.providers[0] if self.providers else "CPUExecutionProvider"
        short = {v: k for k, v in PROVIDERS.items()}.get(first, first)
        self.backend_name = f"onnx-{short}"
        self._inputs = tuple(_spec(a) for a in session.get_inputs())
        self._outputs = tuple(_spec(a) for a in session.get_outputs())

    def run(self, feeds: Sequence[npt.NDArray[np.float32]]) -> list[npt.NDArray[np.float32]]:
        if self._session is None:
            raise BackendError(f"{self.path.name}: model is closed")
        self._check(feeds)
        named = {
            spec.name: np.ascontiguousarray(value, dtype=np.float32)
            for spec, value in zip(self._inputs, feeds, strict=True)
        }
        try:
            result = self._session.run(None, named)
        except Exception as exc:  # onnxruntime raises its own, untyped exceptions
            raise BackendError(
                f"{self.path.name}: onnxruntime run failed: {_first_line(exc)}"
            ) from exc
        return [_as_float32(o) for o in result]

    def close(self) -> None:
        self._session = None


class OnnxBackend:
    """Loads ``.onnx`` files asking for ``providers`` in order (``tensorrt``, ``cuda``, ``cpu``).

    ``cache_dir`` is the root of the TensorRT caches (``<data dir>/trt-cache`` by
    default); ``available`` lists the providers of the build (injectable for tests).
    One intra-op thread by default, like ``LiteRTBackend``: stages run in parallel;
    ``num_threads=None`` leaves it to onnxruntime (every core: the neural swapper's
    network). ``quiet`` keeps onnxruntime's own log to errors.
    """

    model_suffix = ".onnx"

    def __init__(
        self,
        providers: Sequence[ProviderName] = PROVIDER_CHAINS[TENSORRT],
        cache_dir: Path | None = None,
        num_threads: int | None = 1,
        available: AvailableProviders | None = None,
        quiet: bool = False,
    ) -> None:
        unknown = [p for p in providers if p not in PROVIDERS]
        if unknown or not providers:
            raise ConfigError(
                f"unknown onnxruntime provider(s) {unknown or providers!r}; "
                f"choose from {', '.join(PROVIDERS)}"
            )
        self.providers = tuple(providers)
        self.name = f"onnx-{self.providers[0]}"
        self.cache_dir = cache_dir
        self.num_threads = num_threads
        self.quiet = quiet
        self._available = available or available_providers

    @classmethod
    def for_backend(cls, name: str, **options: Any) -> OnnxBackend:
        """The runner an onnxruntime backend (``tensorrt``, ``cuda``, ``onnx-cpu``) stands for."""
        if name not in PROVIDER_CHAINS:
            raise ConfigError(
                f"{name!r} is not an onnxruntime backend ({', '.join(PROVIDER_CHAINS)})"
            )
        return cls(PROVIDER_CHAINS[name], **options)

    def load(self, path: Path) -> OnnxModel:
        asked = [PROVIDERS[p] for p in self.providers]
        if "CPUExecutionProvider" not in asked:
            asked.append("CPUExecutionProvider")  # onnxruntime's last resort in any case
        built = set(self._available())
        usable = [p for p in asked if p in built]
        session = self._session(path, usable)
        model = OnnxModel(path, session)
        self._report(path, asked, built, model.providers)
        logger.info("%s runs on %s", path.name, ", ".join(model.providers))
        return model

    def _session(self, path: Path, providers: list[str]) -> Any:
        ort = _ort()
        options = ort.SessionOptions()
        if self.num_threads:
            options.intra_op_num_threads = self.num_threads
        if self.quiet:
            options.log_severity_level = 3
        with_options = [(p, self._provider_options(p, path)) for p in providers]
        try:
            return ort.InferenceSession(str(path), sess_options=options, providers=with_options)
        except Exception as exc:  # onnxruntime raises its own untyped exceptions
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BackendError(f"onnxruntime cannot load {path}: {first}") from exc

    def _provider_options(self, provider: str, path: Path) -> dict[str, Any]:
        if provider == "TensorrtExecutionProvider":
            cache = trt_cache_dir(sha256_file(path), self.cache_dir)
            cache.mkdir(parents=True, exist_ok=True)
            return {
                "trt_fp16_enable": True,
                "trt_engine_cache_enable": True,
                "trt_engine_cache_path": str(cache),
                "trt_timing_cache_enable": True,
                "trt_timing_cache_path": str(cache),
            }
        if provider == "CUDAExecutionProvider":
            return {"device_id": 0}
        return {}

    def _report(
        self, path: Path, asked: list[str], built: set[str], running: tuple[str, ...]
    ) -> None:
        used = running[0] if running else "nothing"
        for provider in asked:
            if provider in running:
                continue
            if provider not in built:
                reason = (
                    f"{provider} not in this onnxruntime build "
                    f"(it has {', '.join(sorted(built)) or 'none'})"
                )
            else:
                reason = DROPPED_REASON
            record_fallback(path.name, provider, used, reason)
