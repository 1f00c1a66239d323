"""The inference backends' names: the one place they are written.

A hardware profile lists them in ``backends`` (best first), ``choose_backend``
probes them in that order, and each model reports the one it runs on. The
three onnxruntime backends share one runner (``inference/onnx_backend``); its
execution providers have short names of their own (``tensorrt``, ``cuda``,
``cpu``) kept beside it.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

BackendName = Literal["tensorrt", "cuda", "edgetpu", "litert-cpu", "onnx-cpu"]

TENSORRT: Final[BackendName] = "tensorrt"
CUDA: Final[BackendName] = "cuda"
EDGETPU: Final[BackendName] = "edgetpu"
LITERT_CPU: Final[BackendName] = "litert-cpu"
ONNX_CPU: Final[BackendName] = "onnx-cpu"

# Every name, in the order a profile that wants the best would list them.
BACKEND_NAMES: Final[tuple[BackendName, ...]] = get_args(BackendName)
# The backends onnxruntime runs (the same ONNX variants on each).
ONNX_BACKENDS: Final[frozenset[str]] = frozenset({TENSORRT, CUDA, ONNX_CPU})

# onnxruntime's execution providers by the short names ``OnnxBackend`` takes.
ProviderName = Literal["tensorrt", "cuda", "cpu"]
PROVIDERS: Final[dict[ProviderName, str]] = {
    "tensorrt": "TensorrtExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "cpu": "CPUExecutionProvider",
}
TENSORRT_PROVIDER: Final[ProviderName] = "tensorrt"
CUDA_PROVIDER: Final[ProviderName] = "cuda"
CPU_PROVIDER: Final[ProviderName] = "cpu"
# What each onnxruntime backend asks for, in order (onnxruntime falls back per model).
PROVIDER_CHAINS: Final[dict[str, tuple[ProviderName, ...]]] = {
    TENSORRT: (TENSORRT_PROVIDER, CUDA_PROVIDER, CPU_PROVIDER),
    CUDA: (CUDA_PROVIDER, CPU_PROVIDER),
    ONNX_CPU: (CPU_PROVIDER,),
}
