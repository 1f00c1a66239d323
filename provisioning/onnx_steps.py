"""The profile's ONNX variants, made where the bundle is built; and its TensorRT engines.

A profile that names ``NAME.onnx`` for a role runs the fp32 ONNX variant of NAME
(and of the confirming full-range detector). The conversion (tflite2onnx and onnx,
the ``convert`` extra) runs on the machine that builds the bundle: ``mirror provision
bundle --profile P`` writes the variants and their record into ``BUNDLE/onnx/``, and
``bundle.json`` lists each file with its sha256. The device never converts: ``mirror
provision`` copies them into the model cache's ``onnx/`` folder. A variant the bundle
lacks is a warning, and the device runs that role's tflite model on LiteRT instead
(the runtime records that fallback with its reason).

A profile whose backends start with TensorRT needs engines built on the device's own
GPU: on the live device with TensorRT usable, provisioning builds them into
``<data dir>/trt-cache`` (where the runtime looks); anywhere else (``--root``, no GPU)
the runtime builds them at its first start, behind the "preparing" screen.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from pathlib import Path

from appliance.backend_names import TENSORRT, TENSORRT_PROVIDER
from appliance.device.profile import HardwareProfile
from appliance.errors import MirrorError, MissingExtraError
from appliance.inference.runtime_models import confirm_model
from appliance.modelstore.onnx_variants import OnnxVariants, Variant
from appliance.modelstore.store import ModelStore
from appliance.tools.convert import CONVERTIBLE, convert_models  # tools imported on use

logger = logging.getLogger(__name__)

ONNX_SUFFIX = ".onnx"
TRT_CACHE = "trt-cache"
CONVERT_TOOLS = ("tflite2onnx", "onnx")

Say = Callable[[str], None]


def onnx_models(profile: HardwareProfile) -> tuple[str, ...]:
    """The manifest models the profile runs as ONNX (``NAME.onnx`` roles, and their confirm)."""
    roles = profile.models.by_role()
    names = [*roles.values(), confirm_model(roles["detector"])]
    wanted = {n.removesuffix(ONNX_SUFFIX) for n in names if n.endswith(ONNX_SUFFIX)}
    return tuple(n for n in CONVERTIBLE if n in wanted)


def make_variants(store: ModelStore, out: Path, names: tuple[str, ...], say: Say) -> None:
    """Convert ``names`` into ``out`` (the bundle's ``onnx/``) with this machine's tools."""
    absent = [tool for tool in CONVERT_TOOLS if not _importable(tool)]
    if absent:
        raise MissingExtraError(
            f"the profile runs {', '.join(names)} as ONNX, made here when the bundle is built, "
            f"and this Python lacks {', '.join(absent)}: pip install 'face-mirror[convert]' "
            "(from a checkout: pip install -e '.[convert]')"
        )
    convert_models(store, out, names=names, progress=say)


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def usable_variants(variants: OnnxVariants, names: tuple[str, ...]) -> dict[str, Variant]:
    """The variants of ``names`` in ``variants`` made from the pinned model, file intact."""
    try:
        record = variants.read()
    except MirrorError as exc:
        logger.warning("%s", exc)
        return {}
    found: dict[str, Variant] = {}
    for name in names:
        variant = record.variants.get(name)
        if variants.is_current(variant, variants.store.manifest.entry(name).sha256):
            assert variant is not None
            found[name] = variant
    return found


def missing_note(missing: tuple[str, ...], profile: str) -> str:
    return (
        f"the bundle has no usable ONNX variant of {', '.join(missing)}: the device runs the "
        f"tflite model on LiteRT instead (make the bundle with --profile {profile} on a "
        "machine with the convert extra)"
    )


def needs_engines(profile: HardwareProfile) -> bool:
    return bool(profile.backends) and profile.backends[0] == TENSORRT


def tensorrt_here() -> bool:
    """Whether TensorRT can build engines in this process: the provider, its libraries, a GPU."""
    try:
        from appliance.inference import gpu_libs
        from appliance.inference.onnx_backend import available_providers

        if "TensorrtExecutionProvider" not in available_providers():
            return False
        return gpu_libs.prepare().tensorrt is not None and not gpu_libs.cuda_driver_problem()
    except (ImportError, MirrorError):
        return False


def engine_built(cache: Path, model_sha256: str) -> bool:
    """Whether ``cache`` (the trt-cache folder) holds this model's engine for this TensorRT."""
    from appliance.inference import trt_cache

    return trt_cache.has_engine(trt_cache.trt_cache_dir(model_sha256, cache))


def build_engines(store: ModelStore, names: tuple[str, ...], data_dir: Path) -> None:
    """Load each ONNX variant with the TensorRT provider: that builds and caches its engine."""
    from appliance.inference.onnx_backend import OnnxBackend

    backend = OnnxBackend((TENSORRT_PROVIDER,), cache_dir=data_dir / TRT_CACHE)
    variants = OnnxVariants(store)
    for name in names:
        logger.info("building the TensorRT engine of %s", name)
        backend.load(variants.path(name)).close()
