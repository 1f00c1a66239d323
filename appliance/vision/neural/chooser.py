"""Choose the swapper from settings: a provisioned neural one, else the geometric one.

``build_swapper`` never raises for a neural swapper that cannot be used (not
provisioned, unpinned or wrong hash, emap not extracted, a file that does
not match the contract): it records a fallback to the geometric swapper with
the reason and returns that instead.

Backends: ``backend`` runs the swapper network (onnxruntime CPU when None;
the chosen TensorRT/CUDA ``OnnxBackend`` plugs in here). ``fp32_backend`` (CPU when
None) runs the embedder and converter, which run once per identity, and
the fp32 fallback: the declared ``<stem>.fp32.onnx`` variant when
provisioned, else the same file when ``fp32_backend`` differs from ``backend``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from appliance.backend_names import ONNX_CPU
from appliance.config import SwapSettings
from appliance.errors import BackendError, ConfigError, MissingExtraError, ModelError
from appliance.inference.base import Backend
from appliance.inference.fallbacks import record_fallback
from appliance.inference.onnx_backend import OnnxBackend
from appliance.modelstore import ModelStore
from appliance.vision.neural.emap import emap_path, load_emap
from appliance.vision.neural.embedder import NAME as EMBEDDER
from appliance.vision.neural.embedder import ArcFaceEmbedder
from appliance.vision.neural.generator import Generator
from appliance.vision.neural.source import SourceEncoder
from appliance.vision.neural.specs import SPECS, SwapperSpec
from appliance.vision.neural.swapper import GEOMETRIC, Loader, NeuralSwapper
from appliance.vision.swap_geometric import GeometricSwapper

logger = logging.getLogger(__name__)


def build_swapper(
    settings: SwapSettings,
    store: ModelStore,
    backend: Backend | None = None,
    fp32_backend: Backend | None = None,
) -> GeometricSwapper:
    """The swapper ``settings.swapper`` names, or the geometric one with the reason recorded."""
    name = settings.swapper
    if name == GEOMETRIC:
        return GeometricSwapper(settings)
    try:
        swapper = load_neural(settings, store, backend, fp32_backend)
    except (ModelError, BackendError, MissingExtraError, ConfigError) as exc:
        record_fallback(name, name, GEOMETRIC, _reason(name, exc))
        return GeometricSwapper(settings)
    logger.info("swapper: %s", swapper.active)
    return swapper


def _reason(name: str, exc: Exception) -> str:
    if isinstance(exc, FileNotFoundError):
        missing = f" ({Path(exc.filename).name} missing)" if exc.filename else ""
        return f"{name} not provisioned: run the installer bundle{missing}"
    return str(exc)


def load_neural(
    settings: SwapSettings,
    store: ModelStore,
    backend: Backend | None = None,
    fp32_backend: Backend | None = None,
) -> NeuralSwapper:
    """Load a provisioned neural swapper; raises a clear ``MirrorError`` when it cannot."""
    spec = SPECS.get(settings.swapper)
    if spec is None:
        raise ConfigError(f"{settings.swapper!r} is not a neural swapper ({', '.join(SPECS)})")
    model_path = store.provided_path(spec.name)
    embedder_path = store.provided_path(EMBEDDER)
    emap = load_emap(emap_path(model_path)) if spec.source == "emap" else None
    fp32 = fp32_backend or cpu_backend()
    main = backend or fp32
    converter = None
    if store.has_provided(spec.name, "converter"):
        converter = fp32.load(store.provided_path(spec.name, "converter"))
    model = main.load(model_path)
    generator = Generator(model, spec, f"{spec.name} on {model.backend_name}")
    source = SourceEncoder(
        ArcFaceEmbedder(fp32.load(embedder_path)), spec, emap=emap, converter=converter
    )
    return NeuralSwapper(settings, generator, source, _fp32_stages(spec, store, main, fp32))


def cpu_backend() -> OnnxBackend:
    """The default runner: onnxruntime on the CPU, every core, its own log kept to errors."""
    return OnnxBackend.for_backend(ONNX_CPU, num_threads=None, quiet=True)


def _fp32_stages(
    spec: SwapperSpec, store: ModelStore, main: Backend, fp32: Backend
) -> list[tuple[str, Loader]]:
    if store.has_provided(spec.name, "fp32"):
        label = f"{spec.name} fp32 variant on {fp32.name}"
        return [(label, _loader(spec, label, fp32, lambda: store.provided_path(spec.name, "fp32")))]
    if fp32 is not main and fp32.name != main.name:
        label = f"{spec.name} on {fp32.name}"
        return [(label, _loader(spec, label, fp32, lambda: store.provided_path(spec.name)))]
    return []


def _loader(spec: SwapperSpec, label: str, backend: Backend, path: Callable[[], Path]) -> Loader:
    def load() -> Generator:
        return Generator(backend.load(path()), spec, label)

    return load
