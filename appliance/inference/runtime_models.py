"""Resolve a profile's model per role to the file that runs and the backend that runs it.

A profile names each role's model as a manifest name (``face_landmarks``: its
tflite file), a variant of one (``face_detector_short.onnx``: the ONNX variant
``mirror models convert`` made; ``face_detector_short_edgetpu``: the
``<file>_edgetpu.tflite`` that ``edgetpu_compiler`` made, beside the tflite
one), ``geometric`` (built in) or an installer-provided model. The rules:

- an ONNX variant on an onnxruntime backend (tensorrt, cuda, onnx-cpu) runs
  when it is recorded and verified; otherwise the tflite model runs on LiteRT
  and the fallback is recorded with the reason;
- an Edge TPU variant on the edgetpu backend runs when its file is present;
  otherwise the same, the tflite model on LiteRT, recorded;
- a variant whose kind of backend was not chosen runs as the tflite model on
  LiteRT (the backend fallback itself is already recorded by ``choose_backend``);
- a tflite model runs on LiteRT on the CPU: the v2 478-point landmarker cannot
  be converted to ONNX at all, so landmarks stay there beside an ONNX detector.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from appliance.backend_names import EDGETPU, LITERT_CPU, ONNX_BACKENDS, ONNX_CPU
from appliance.errors import ConfigError, ModelError
from appliance.inference.base import Backend, Model
from appliance.inference.edgetpu_parts import edgetpu_variant, variant_missing
from appliance.inference.fallbacks import Fallback, record_fallback
from appliance.inference.model_check import BUILTIN_MODELS, base_model
from appliance.modelstore import ModelStore
from appliance.modelstore.onnx_variants import OnnxVariants, Precision

logger = logging.getLogger(__name__)

LITERT = LITERT_CPU
V2_LANDMARKER = "face_landmarks"
# The suffix a variant adds to its manifest name, and what it is.
FORMS: dict[str, tuple[str, Precision]] = {
    ".onnx": ("onnx", "fp32"),
    ".int8.onnx": ("onnx", "int8"),
    "_edgetpu": (EDGETPU, "fp32"),
}
_PROVIDED_STATE = {"missing": "not provided", "bad-hash": "bad hash", "unpinned": "unpinned"}


@dataclass(frozen=True)
class RoleChoice:
    """One role: the profile's model, the file that runs, what runs it, and why."""

    role: str
    model: str  # as the profile names it
    base: str | None  # the manifest (or installer-provided) model it stands for
    file: Path | None  # the file that runs; None: built in or not installed
    backend: str  # a backend name, "builtin", or "none" (nothing to run)
    reason: str = ""  # why, when it is not simply the profile's model on the chosen backend
    source: Path | None = field(default=None, compare=False, repr=False)  # what loader.load gets
    loader: Any = field(default=None, compare=False, repr=False)  # a Backend

    def load(self) -> Model:
        if self.loader is None or self.source is None:
            raise ModelError(f"{self.role} model {self.model} has nothing to load: {self.reason}")
        model: Model = self.loader.load(self.source)
        return model

    def summary(self) -> str:
        """What runs, on what, and why: ``face_detector.tflite on litert-cpu``."""
        if self.file is None:
            return f"{self.model}: {self.reason}"
        text = f"{self.file.name} on {self.backend}"
        return f"{text}: {self.reason}" if self.reason else text

    def describe(self) -> str:
        return f"{self.role:11} {self.summary()}"


@dataclass(frozen=True)
class Resolver:
    """What a role is resolved against: the store, the ONNX variants and the chosen backend."""

    store: ModelStore
    variants: OnnxVariants
    backend: str
    engine: Any  # the chosen backend object (a fake in some doctor tests)
    litert: Backend
    skipped: Mapping[str, str]  # backend name -> why it was not used

    def resolve(self, role: str, model: str) -> tuple[RoleChoice, Fallback | None]:
        if model in BUILTIN_MODELS:
            return RoleChoice(role, model, None, None, "builtin", BUILTIN_MODELS[model]), None
        if model in self.store.manifest.provided:
            return self._provided(role, model), None
        entries = self.store.manifest.entries()
        if model in entries:
            return self._tflite(role, model, model, self._tflite_note(model)), None
        base = base_model(model, entries)
        form = FORMS.get(model[len(base) :]) if base is not None else None
        if base is None or form is None:
            why = "not in the model manifest nor a known variant of one (.onnx, _edgetpu)"
            return RoleChoice(role, model, base, None, "none", why), None
        kind, precision = form
        if kind == EDGETPU:
            return self._edgetpu(role, model, base)
        return self._onnx(role, model, base, precision)

    def _tflite(self, role: str, model: str, base: str, reason: str) -> RoleChoice:
        path = self.store.file_path(base)
        return RoleChoice(role, model, base, path, LITERT, reason, path, self.litert)

    def _tflite_note(self, base: str) -> str:
        if self.backend in ONNX_BACKENDS and base == V2_LANDMARKER:
            return "the v2 478-point landmarker cannot be converted to ONNX, so LiteRT on the CPU"
        if self.backend != LITERT:
            return "the profile names the tflite model, so LiteRT on the CPU"
        return ""

    def _not_in_use(self, kind: str, names: frozenset[str]) -> str:
        tried = [name for name in self.skipped if name in names]
        why = f"({', '.join(tried)}) was skipped" if tried else f"is not used ({self.backend} is)"
        return f"{kind} {why}, so the tflite model on LiteRT"

    def _fallback(self, role: str, model: str, base: str, reason: str) -> Fallback:
        used = f"{self.store.file_path(base).name} on {LITERT}"
        return record_fallback(f"{role} model", f"{model} on {self.backend}", used, reason)

    def _onnx(
        self, role: str, model: str, base: str, precision: Precision
    ) -> tuple[RoleChoice, Fallback | None]:
        if self.backend not in ONNX_BACKENDS:
            reason = self._not_in_use("onnxruntime", ONNX_BACKENDS)
            return self._tflite(role, model, base, reason), None
        try:
            path = self.variants.path(base, precision)
        except (ModelError, ConfigError) as exc:
            reason = str(exc)
            fallback = self._fallback(role, model, base, reason)
            return self._tflite(role, model, base, f"no usable ONNX variant: {reason}"), fallback
        return RoleChoice(role, model, base, path, self.backend, "", path, self.engine), None

    def _edgetpu(self, role: str, model: str, base: str) -> tuple[RoleChoice, Fallback | None]:
        if self.backend != EDGETPU:
            reason = self._not_in_use("the Edge TPU", frozenset({EDGETPU}))
            return self._tflite(role, model, base, reason), None
        tflite = self.store.file_path(base)
        variant = edgetpu_variant(tflite)
        if not variant.is_file():
            reason = variant_missing(variant)
            fallback = self._fallback(role, model, base, reason)
            return self._tflite(role, model, base, reason), fallback
        return RoleChoice(role, model, base, variant, EDGETPU, "", tflite, self.engine), None

    def _provided(self, role: str, model: str) -> RoleChoice:
        result = self.store.verify_provided(model)
        if result.status != "ok":
            state = _PROVIDED_STATE.get(result.status, result.status)
            why = f"installer-provided, {state}: the geometric swapper runs instead"
            return RoleChoice(role, model, model, None, "none", why)
        onnx = self.backend in ONNX_BACKENDS
        runs_on = self.backend if onnx else ONNX_CPU
        loader = self.engine if onnx else None
        path = result.path
        return RoleChoice(role, model, model, path, runs_on, "installer-provided", path, loader)


def confirm_model(detector: str) -> str:
    """The confirmation detector (full range) in the form the profile's detector has."""
    for base in ("face_detector_short", "face_detector_full"):
        if detector.startswith(base) and detector[len(base) :] in ("", *FORMS):
            return "face_detector_full" + detector[len(base) :]
    return "face_detector_full"
