"""onnxruntime backend: TensorRT (fp16, cached engines), then CUDA, then CPU, verified.

The one onnxruntime runner: the detector and landmark variants on the
``tensorrt``, ``cuda`` and ``onnx-cpu`` backends, and the neural swappers'
networks (on the chosen onnxruntime backend or, by default, the CPU).

onnxruntime drops an execution provider it cannot start without raising: the
session simply runs on the next one. So the providers are checked twice: a
provider missing from this onnxruntime build is not asked for at all, and after
the session exists ``session.get_providers()`` is compared with what was asked.
Every provider asked for and not running is recorded with ``record_fallback``.

Before a GPU provider is asked for, ``gpu_libs.prepare()`` makes CUDA, cuDNN and
TensorRT findable (``onnxruntime.preload_dlls()``, NVIDIA's ``tensorrt_libs``).
Sessions are made without onnxruntime's own fallback (``enable_fallback=0``, which
would print the error and retry on the CPU): a provider that fails the session is
left out and the session made again with the rest, and its error, cut to what it
says (``CUDA failure 35: ...``, the library the loader did not find), is the reason.

TensorRT engines and its timing cache live under ``<data dir>/trt-cache/``
(``trt_cache``), in one folder per model sha256, TensorRT and onnxruntime version,
so an engine is never reused for another model or version; the folders of other
versions are removed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from appliance.backend_names import (
    CUDA_PROVIDER,
    PROVIDER_CHAINS,
    PROVIDERS,
    TENSORRT,
    TENSORRT_PROVIDER,
    ProviderName,
)
from appliance.errors import BackendError, ConfigError
from appliance.inference import gpu_libs, trt_cache
from appliance.inference.base import SpecModel, TensorSpec
from appliance.inference.fallbacks import record_fallback
from appliance.modelstore.hashing import sha256_file

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
    ort = onnxruntime_module()
    if ort is None:  # pragma: no cover - dependency of the package
        raise BackendError("onnxruntime is not installed; pip install onnxruntime")
    return ort


def onnxruntime_module() -> Any | None:
    """onnxruntime, or None where it is not installed (``gpu_libs`` and ``trt_cache`` ask)."""
    try:
        import onnxruntime
    except ImportError:
        return None
    return onnxruntime


def available_providers() -> list[str]:
    """The execution providers compiled into this onnxruntime."""
    return [str(p) for p in _ort().get_available_providers()]


trt_cache_dir = trt_cache.trt_cache_dir  # where a model's engines live (see trt_cache)
_SHORT = {PROVIDERS[short]: short for short in (TENSORRT_PROVIDER, CUDA_PROVIDER)}
GPU_PROVIDERS = frozenset(_SHORT)  # what gpu_libs.prepare() makes loadable
# What onnxruntime's messages say, without their C++ source locations and signatures.
_SAYS = (
    re.compile(r"((?:CUDA|CUDNN|CUBLAS) failure \d+: [^;]+)"),
    re.compile(r"Failed to load library \S+ with error: (.+)"),
    re.compile(r"\[ONNXRuntimeError\] : \d+ : \w+ : (.+)"),
)
_TRT_LIBRARIES_MISSING = "Please install TensorRT libraries"
ONNXRUNTIME_LOG = "onnxruntime's log says which"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def provider_error(exc: BaseException, provider: str) -> str:
    """What onnxruntime's session error says about ``provider``, in one short line."""
    text = " ".join(str(exc).split())
    if _TRT_LIBRARIES_MISSING in text and provider == PROVIDERS[TENSORRT_PROVIDER]:
        missing = gpu_libs.provider_load_error(TENSORRT_PROVIDER)
        return f"TensorRT's libraries did not load: {missing or ONNXRUNTIME_LOG}"
    said = next((m.group(1).strip() for p in _SAYS if (m := p.search(text))), None)
    if said is None:
        return _first_line(exc)[-300:]
    if said.startswith("CUDA failure"):  # 35 "driver insufficient" also means no driver at all
        driver = gpu_libs.cuda_driver_problem()
        return f"{said} ({driver})" if driver else said
    return said


def _spec(arg: Any) -> TensorSpec:
    shape = tuple(d if isinstance(d, int) else -1 for d in (arg.shape or ()))
    return TensorSpec(name=str(arg.name), shape=shape, dtype=_ONNX_DTYPES.get(arg.type, arg.type))


def _as_float32(value: Any) -> npt.NDArray[np.float32]:
    """An output as an array, half floats widened (an fp16 network's output) and others as is."""
    out = np.asarray(value)
    return out.astype(np.float32) if out.dtype == np.float16 else out


class OnnxModel(SpecModel):
    """One inference session; ``backend_name`` names the provider that really runs it."""

    def __init__(self, path: Path, session: Any, asked: tuple[str, ...] = ()) -> None:
        self.path = path
        self._session = session
        self.asked = asked  # the providers asked for, best first
        self.providers: tuple[str, ...] = tuple(session.get_providers())  # what runs it
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
        if GPU_PROVIDERS.intersection(usable):
            gpu_libs.prepare()
        session, failed = self._session_chain(path, usable)
        model = OnnxModel(path, session, tuple(asked))
        self._report(path, asked, built, model.providers, failed)
        logger.info("%s runs on %s", path.name, ", ".join(model.providers))
        return model

    def needs_engine_build(self, path: Path) -> bool:
        """Whether loading ``path`` would build a TensorRT engine first (minutes): TensorRT
        asked for and in this build, and no engine cached for this model and version."""
        if TENSORRT_PROVIDER not in self.providers:
            return False
        if "TensorrtExecutionProvider" not in set(self._available()):
            return False
        if gpu_libs.prepare().tensorrt is None or gpu_libs.cuda_driver_problem():
            return False  # TensorRT cannot run here: nothing will be built
        return not trt_cache.has_engine(trt_cache_dir(sha256_file(path), self.cache_dir))

    def _session_chain(self, path: Path, providers: list[str]) -> tuple[Any, dict[str, str]]:
        """A session with the first providers that start; a provider whose start fails the
        session is left out (with onnxruntime's reason) and the session made again."""
        failed: dict[str, str] = {}
        remaining = list(providers)
        while True:
            try:
                return self._session(path, remaining), failed
            except BackendError as exc:
                first = remaining[0] if remaining else "CPUExecutionProvider"
                if first not in GPU_PROVIDERS or exc.__cause__ is None:
                    raise
                failed[first] = provider_error(exc.__cause__, first)
                logger.info("%s: %s failed: %s", path.name, first, failed[first])
                remaining = remaining[1:]

    def _session(self, path: Path, providers: list[str]) -> Any:
        ort = _ort()
        options = ort.SessionOptions()
        if self.num_threads:
            options.intra_op_num_threads = self.num_threads
        if self.quiet:
            options.log_severity_level = 3
        with_options = [(p, self._provider_options(p, path)) for p in providers]
        try:
            return ort.InferenceSession(
                str(path), sess_options=options, providers=with_options, enable_fallback=0
            )
        except Exception as exc:  # onnxruntime raises its own untyped exceptions
            raise BackendError(f"onnxruntime cannot load {path}: {_first_line(exc)}") from exc

    def _provider_options(self, provider: str, path: Path) -> dict[str, Any]:
        if provider == "TensorrtExecutionProvider":
            version = trt_cache.version_key()
            trt_cache.prune(self.cache_dir, version)
            cache = trt_cache_dir(sha256_file(path), self.cache_dir, version)
            try:
                cache.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # the engine is then built at every start: slow, not broken
                logger.warning("no TensorRT cache for %s: %s", path.name, exc)
                return {"trt_fp16_enable": True}
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
        self,
        path: Path,
        asked: list[str],
        built: set[str],
        running: tuple[str, ...],
        failed: dict[str, str],
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
            elif provider in failed:
                reason = failed[provider]
            else:
                reason = self._dropped(provider)
            record_fallback(path.name, provider, used, reason)

    @staticmethod
    def _dropped(provider: str) -> str:
        """onnxruntime left it out without an error: its library (or one it needs) did not load."""
        short = _SHORT.get(provider)
        missing = gpu_libs.provider_load_error(short) if short else None
        return f"its library did not load: {missing}" if missing else DROPPED_REASON
