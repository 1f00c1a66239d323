"""Pick the first usable backend of an ordered list, saying why each one before it was not.

Names: ``tensorrt`` and ``cuda`` (onnxruntime on the GPU, each falling back to
the CPU per model), ``edgetpu`` (LiteRT with the Coral delegate), ``litert-cpu``
and ``onnx-cpu``. Each check is cheap: a provider compiled into onnxruntime and
its libraries found (``gpu_libs``: CUDA and cuDNN preloaded, TensorRT's libnvinfer)
and the NVIDIA driver seeing a GPU, a TPU that answers. The session made later still verifies
what runs (see ``onnx_backend``). ``mirror doctor`` shows the attempts; every
backend skipped on the way to the chosen one is a recorded fallback.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from appliance.backend_names import (
    BACKEND_NAMES,
    CPU_PROVIDER,
    CUDA,
    CUDA_PROVIDER,
    EDGETPU,
    LITERT_CPU,
    ONNX_CPU,
    PROVIDERS,
    TENSORRT,
    TENSORRT_PROVIDER,
    ProviderName,
)
from appliance.errors import BackendError, ConfigError
from appliance.inference import gpu_libs
from appliance.inference.base import Backend
from appliance.inference.edgetpu import EdgeTpuBackend
from appliance.inference.fallbacks import record_fallback
from appliance.inference.litert import LiteRTBackend
from appliance.inference.onnx_backend import OnnxBackend, available_providers

logger = logging.getLogger(__name__)

FALLBACK_SUBJECT = "inference backend"


@dataclass(frozen=True)
class Attempt:
    """One backend tried: usable or not, and why."""

    name: str
    ok: bool
    reason: str


Probe = Callable[[], tuple[Backend | None, str]]


def _provider_missing(short: ProviderName) -> str | None:
    provider = PROVIDERS[short]
    try:
        built = available_providers()
    except BackendError as exc:  # no onnxruntime at all (a Jetson venv without NVIDIA's)
        return str(exc)
    if provider in built:
        return None
    return f"{provider} not in this onnxruntime build (it has {', '.join(built) or 'none'})"


def _tensorrt() -> tuple[Backend | None, str]:
    missing = _provider_missing(TENSORRT_PROVIDER)
    if missing:
        return None, missing
    libraries = gpu_libs.prepare()
    if libraries.tensorrt is None:
        return None, libraries.tensorrt_note
    driver = gpu_libs.cuda_driver_problem()
    if driver:
        return None, driver
    version = libraries.tensorrt_version or "of unknown version"
    found = f"TensorRT {version} from {libraries.tensorrt}"
    return OnnxBackend.for_backend(TENSORRT), f"TensorrtExecutionProvider with {found}"


def _cuda() -> tuple[Backend | None, str]:
    missing = _provider_missing(CUDA_PROVIDER)
    if missing:
        return None, missing
    libraries = gpu_libs.prepare()
    driver = gpu_libs.cuda_driver_problem()
    if driver:
        return None, driver
    if not libraries.cuda_ready:
        # the system's CUDA may still serve; the session says (its reason is recorded)
        logger.info("CUDA libraries not preloaded: %s", libraries.cuda_note)
    return OnnxBackend.for_backend(CUDA), f"CUDAExecutionProvider, CUDA {libraries.cuda_note}"


def _edgetpu() -> tuple[Backend | None, str]:
    backend = EdgeTpuBackend()
    reason = backend.probe()
    if reason is not None:
        return None, reason
    return backend, "Edge TPU delegate loaded in a child process"


def _litert_cpu() -> tuple[Backend | None, str]:
    return LiteRTBackend(), "LiteRT on the CPU"


def _onnx_cpu() -> tuple[Backend | None, str]:
    missing = _provider_missing(CPU_PROVIDER)
    if missing:
        return None, missing
    return OnnxBackend.for_backend(ONNX_CPU), "onnxruntime CPUExecutionProvider"


PROBES: dict[str, Probe] = {
    TENSORRT: _tensorrt,
    CUDA: _cuda,
    EDGETPU: _edgetpu,
    LITERT_CPU: _litert_cpu,
    ONNX_CPU: _onnx_cpu,
}


def choose_backend(order: Sequence[str]) -> tuple[Backend, list[Attempt]]:
    """The first usable backend of ``order`` and every attempt made, with its reason."""
    unknown = [name for name in order if name not in PROBES]
    if unknown or not order:
        raise ConfigError(
            f"unknown backend name(s) {unknown or list(order)!r}; "
            f"choose from {', '.join(BACKEND_NAMES)}"
        )
    attempts: list[Attempt] = []
    for name in order:
        backend, reason = PROBES[name]()
        attempts.append(Attempt(name, backend is not None, reason))
        if backend is not None:
            for failed in attempts[:-1]:
                record_fallback(FALLBACK_SUBJECT, failed.name, name, failed.reason)
            logger.info("inference backend: %s (%s)", name, reason)
            return backend, attempts
    tried = "; ".join(f"{a.name}: {a.reason}" for a in attempts)
    raise BackendError(f"no usable inference backend ({tried})")
