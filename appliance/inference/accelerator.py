"""Whether the profile's accelerator runs the models, or the mirror fell back to the CPU.

The profile lists its backends best first. When the first is an accelerator
(TensorRT, CUDA, the Edge TPU) and the mirror runs on the CPU instead, the
mirror works, only slower: a non-fatal problem that ``/healthz``, the
dashboard and (as a small note for staff) the HDMI screen report. It is read
from what was decided, never decided again: the runtime choice's attempts
(``choose_backend``) and the fallbacks recorded while the models loaded (an
execution provider onnxruntime dropped, an Edge TPU model whose first invoke
failed).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from appliance.backend_names import (
    CPU_PROVIDER,
    CUDA,
    CUDA_PROVIDER,
    EDGETPU,
    LITERT_CPU,
    ONNX_CPU,
    PROVIDERS,
    TENSORRT,
    TENSORRT_PROVIDER,
)
from appliance.inference.fallbacks import Fallback
from appliance.inference.runtime import RuntimeChoice

logger = logging.getLogger(__name__)

ACCELERATORS = frozenset({TENSORRT, CUDA, EDGETPU})
# what an accelerator is called where a model's fallback is recorded
_ACCELERATED = frozenset(
    {TENSORRT, CUDA, EDGETPU, PROVIDERS[TENSORRT_PROVIDER], PROVIDERS[CUDA_PROVIDER]}
)
_ON_CPU = frozenset({LITERT_CPU, ONNX_CPU, PROVIDERS[CPU_PROVIDER], "nothing"})


@dataclass(frozen=True)
class AcceleratorState:
    """The profile's accelerator (or "" when it asks for none) and why it is not used."""

    wanted: str = ""
    problem: str = ""


def accelerator_state(choice: RuntimeChoice, recorded: Sequence[Fallback]) -> AcceleratorState:
    """The accelerator ``choice``'s profile asks first, and why the CPU runs instead ("" when
    the accelerator runs, or the profile asks for none); ``recorded``: ``fallbacks()``."""
    first = choice.attempts[0] if choice.attempts else None
    if first is None or first.name not in ACCELERATORS:
        return AcceleratorState()
    if choice.backend in (LITERT_CPU, ONNX_CPU):
        problem = f"{first.name} not used ({first.reason}); running on the CPU ({choice.backend})"
        return AcceleratorState(first.name, problem)
    on_cpu: dict[str, str] = {}  # model -> the first reason recorded
    for fallback in recorded:
        if _dropped_to_cpu(fallback, choice.backend):
            on_cpu.setdefault(fallback.subject, fallback.reason)
    if on_cpu:
        models = "; ".join(f"{model} ({why})" for model, why in sorted(on_cpu.items()))
        return AcceleratorState(
            choice.backend, f"{choice.backend} chosen, but on the CPU: {models}"
        )
    return AcceleratorState(first.name)


def _dropped_to_cpu(fallback: Fallback, backend: str) -> bool:
    """A model that asked ``backend``'s accelerator runs on the CPU."""
    if fallback.wanted not in _ACCELERATED or fallback.used not in _ON_CPU:
        return False
    return (fallback.wanted == EDGETPU) == (backend == EDGETPU)
