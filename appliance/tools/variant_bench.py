"""``mirror models convert --bench``: ms per inference of LiteRT fp32, ONNX fp32 and ONNX int8.

One thread each, the same input for all, a few warm-up runs, then the median
of ``repeats`` runs. An int8 variant that the accuracy gate rejected is still
timed (from this run's candidate, or quantised again) and marked rejected.
"""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from appliance.errors import ModelMissingError
from appliance.inference.base import Model
from appliance.inference.litert import LiteRTBackend
from appliance.inference.onnx_backend import OnnxBackend
from appliance.modelstore.onnx_variants import OnnxVariants, variant_key
from appliance.tools.quantize import calibration_feeds, quantize
from appliance.tools.variant_check import Photo

logger = logging.getLogger(__name__)

WARMUP_RUNS = 5


@dataclass(frozen=True)
class BenchRow:
    model: str
    variant: str  # "litert fp32", "onnx fp32", "onnx int8"
    ms: float
    note: str = ""

    def describe(self) -> str:
        note = f"  ({self.note})" if self.note else ""
        return f"{self.model:20} {self.variant:12} {self.ms:7.2f} ms{note}"


def time_model(model: Model, repeats: int, seed: int = 0) -> float:
    """Median ms per ``run`` on one fixed input."""
    rng = np.random.default_rng(seed)
    feeds = [rng.uniform(0, 1, s.shape).astype(np.float32) for s in model.inputs]
    for _ in range(WARMUP_RUNS):
        model.run(feeds)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        model.run(feeds)
        samples.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(samples)


def _int8_bytes(
    variants: OnnxVariants, name: str, photos: Sequence[Photo], candidates: dict[str, bytes]
) -> tuple[bytes, str]:
    key = variant_key(name, "int8")
    try:
        return variants.path(name, "int8").read_bytes(), "kept"
    except ModelMissingError:
        pass
    if key not in candidates:
        fp32 = OnnxBackend(("cpu",)).load(variants.path(name))
        detector = LiteRTBackend().load(variants.store.path("face_detector_short"))
        feeds = calibration_feeds(name, fp32, photos, detector)
        candidates[key] = quantize(variants.path(name), fp32.inputs[0].name, feeds)
    return candidates[key], "rejected by the accuracy gate, not kept"


def bench_variants(
    variants: OnnxVariants,
    names: Sequence[str],
    photos: Sequence[Photo],
    candidates: dict[str, bytes] | None = None,
    repeats: int = 50,
) -> list[BenchRow]:
    candidates = {} if candidates is None else candidates
    rows = []
    for name in names:
        litert = LiteRTBackend().load(variants.store.path(name))
        rows.append(BenchRow(name, "litert fp32", time_model(litert, repeats)))
        onnx = OnnxBackend(("cpu",)).load(variants.path(name))
        rows.append(BenchRow(name, "onnx fp32", time_model(onnx, repeats)))
        data, note = _int8_bytes(variants, name, photos, candidates)
        with tempfile.TemporaryDirectory(prefix="mirror-bench-") as tmp:
            path = Path(tmp) / f"{name}.int8.onnx"
            path.write_bytes(data)
            int8 = OnnxBackend(("cpu",)).load(path)
            rows.append(BenchRow(name, "onnx int8", time_model(int8, repeats), note))
    return rows
