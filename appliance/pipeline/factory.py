"""Build a ready frame processor from settings, the model store and an identity.

Without a runtime choice every model runs on LiteRT on the CPU. With one
(``appliance.inference.runtime``), each analyzer model loads as its role was
resolved (an ONNX detector beside LiteRT landmarks, say), and a neural
swapper runs on the chosen backend when that is onnxruntime-based.
"""

from __future__ import annotations

import logging
from pathlib import Path

from appliance.config import LivenessSettings, Settings
from appliance.inference.base import Backend
from appliance.inference.litert import LiteRTBackend
from appliance.inference.runtime import RuntimeChoice
from appliance.modelstore import ModelStore
from appliance.pipeline.processor import FrameProcessor
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.identity import Identity, enroll_file
from appliance.vision.label import Labeler
from appliance.vision.neural.chooser import build_swapper

logger = logging.getLogger(__name__)


def resolve_photo(spec: str, store: ModelStore) -> Path:
    """A photo given as a manifest asset name (``grace_hopper``) or as a file path."""
    entries = store.manifest.assets
    if spec in entries and entries[spec].kind == "photo":
        return store.path(spec)
    return Path(spec)


def build_analyzer(
    settings: Settings,
    store: ModelStore,
    backend: Backend | None = None,
    *,
    runtime: RuntimeChoice | None = None,
) -> FaceAnalyzer:
    """The analyzer on ``backend``, else on ``runtime``'s choice per role, else on LiteRT."""
    if backend is None and runtime is not None:
        backend = runtime.analyzer_backend(store)
    return FaceAnalyzer.from_store(
        store,
        backend or LiteRTBackend(),
        kind=settings.detector.model,
        min_score=settings.detector.min_score,
        max_faces=settings.detector.max_faces,
        landmarks=settings.detector.landmarks,
    )


def build_processor(
    settings: Settings,
    store: ModelStore,
    identity: str | None,
    analyzer: FaceAnalyzer | None = None,
    max_faces: int | None = None,
    *,
    runtime: RuntimeChoice | None = None,
    liveness: LivenessSettings | None = None,
) -> FrameProcessor:
    """Load the models, enroll the identity once, and assemble the processor.

    Faces swapped: ``max_faces`` when given, else from ``settings.pipeline``
    (1 for ``largest``, ``max_faces`` for ``all``). The swapper is the one
    ``settings.swap.swapper`` names when provisioned, else the geometric one
    (the reason is recorded as a fallback). ``runtime``: the models load as it
    chose, and a neural swapper runs on its backend when that is onnxruntime-based.
    ``liveness``: gate swaps on it (a live camera passes ``settings.liveness``);
    None, for files and the demo photo, swaps every face.
    """
    labeler = Labeler(settings.label, store.path("label_font"))
    analyzer = analyzer or build_analyzer(settings, store, runtime=runtime)
    enrolled: Identity | None = None
    if identity is not None:
        enrolled = enroll_file(resolve_photo(identity, store), analyzer)
    onnx = runtime.onnx_backend() if runtime is not None else None
    swapper = build_swapper(settings.swap, store, backend=onnx)
    pipeline = settings.pipeline
    faces = max_faces or (1 if pipeline.faces == "largest" else pipeline.max_faces)
    return FrameProcessor(
        analyzer,
        swapper,
        labeler,
        enrolled,
        max_faces=faces,
        redetect_every=pipeline.redetect_every,
        liveness=liveness,
    )
