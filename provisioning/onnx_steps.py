"""The profile's model conversions (tflite -> ONNX) and TensorRT engines, planned and run.

A profile that names ``NAME.onnx`` for a role gets the fp32 ONNX variant of
NAME (and of the confirming full-range detector) made on the provisioned
root by ``appliance.tools.convert``. A profile whose backends start
with TensorRT needs engines built on the device's own GPU: on the live
device with the onnxruntime TensorRT provider, provisioning builds them into
``<data dir>/trt-cache`` (where the runtime looks); anywhere else (``--root``,
no GPU) the step is deferred to the runtime's first start, and said so.
"""

from __future__ import annotations

import logging
from pathlib import Path

from appliance.backend_names import TENSORRT, TENSORRT_PROVIDER
from appliance.device.profile import HardwareProfile
from appliance.errors import MirrorError
from appliance.inference.runtime_models import confirm_model
from appliance.modelstore.onnx_variants import OnnxVariants
from appliance.modelstore.store import ModelStore
from appliance.tools.convert import CONVERTIBLE, convert_models

logger = logging.getLogger(__name__)

ONNX_SUFFIX = ".onnx"
TRT_CACHE = "trt-cache"


def onnx_models(profile: HardwareProfile) -> tuple[str, ...]:
    """The manifest models the profile runs as ONNX (``NAME.onnx`` roles, and their confirm)."""
    roles = profile.models.by_role()
    names = [*roles.values(), confirm_model(roles["detector"])]
    wanted = {n.removesuffix(ONNX_SUFFIX) for n in names if n.endswith(ONNX_SUFFIX)}
    return tuple(n for n in CONVERTIBLE if n in wanted)


def conversions_current(store: ModelStore, names: tuple[str, ...]) -> bool:
    variants = OnnxVariants(store)
    record = variants.read()
    return all(
        variants.is_current(record.variants.get(n), store.manifest.entry(n).sha256) for n in names
    )


def convert(store: ModelStore, names: tuple[str, ...]) -> None:
    convert_models(store, names=names, progress=lambda msg: logger.info("%s", msg))


def needs_engines(profile: HardwareProfile) -> bool:
    return bool(profile.backends) and profile.backends[0] == TENSORRT


def tensorrt_here() -> bool:
    """Whether this machine's onnxruntime has the TensorRT provider."""
    try:
        from appliance.inference.onnx_backend import available_providers

        return "TensorrtExecutionProvider" in available_providers()
    except (ImportError, MirrorError):
        return False


def build_engines(store: ModelStore, names: tuple[str, ...], data_dir: Path) -> None:
    """Load each ONNX variant with the TensorRT provider: that builds and caches its engine."""
    from appliance.inference.onnx_backend import OnnxBackend

    backend = OnnxBackend((TENSORRT_PROVIDER,), cache_dir=data_dir / TRT_CACHE)
    variants = OnnxVariants(store)
    for name in names:
        logger.info("building the TensorRT engine of %s", name)
        backend.load(variants.path(name))
