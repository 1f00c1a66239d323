"""``mirror models convert``: ONNX variants of the embedded tflite models, made with tflite2onnx.

tflite2onnx (no TensorFlow needed) converts BlazeFace short and full range and
the 468-point v1 mesh; it cannot convert the v2 landmarker. Each variant gets
the tflite model's tensor names and NHWC shapes back (``onnx_layout``), is
checked against LiteRT on a fixed input before it is written, is written
atomically, and is recorded with its hash and its source's hash. A variant
whose source and file still match the record is not made again.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from appliance.errors import MissingExtraError, ModelError
from appliance.fileio import atomic_write_bytes
from appliance.inference.litert import LiteRTBackend
from appliance.modelstore.hashing import sha256_bytes
from appliance.modelstore.onnx_variants import OnnxVariants, Variant
from appliance.modelstore.store import ModelStore

logger = logging.getLogger(__name__)

CONVERTIBLE = ("face_detector_short", "face_detector_full", "face_landmarks_v1")
# Largest difference from LiteRT allowed at conversion, relative to the output's magnitude.
CHECK_RTOL = 1e-3

Progress = Callable[[str], None]


@dataclass
class ConvertReport:
    converted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def _tflite2onnx() -> Any:
    try:
        import tflite2onnx
    except ImportError as exc:
        raise MissingExtraError(
            f"converting needs tflite2onnx ({exc}); pip install -e '.[convert]'"
        ) from exc
    return tflite2onnx


def tool_version() -> str:
    import onnx

    return f"tflite2onnx {_tflite2onnx().__version__}, onnx {onnx.__version__}"


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    """tflite2onnx warns about every fp16 weight it folds; keep that out of the console."""
    log = logging.getLogger(name)
    before = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(before)


def _tensor_shapes(details: list[dict[str, Any]]) -> dict[str, tuple[int, ...]]:
    return {str(d["name"]): tuple(int(x) for x in d["shape"]) for d in details}


def tflite_to_onnx(tflite_path: Path) -> bytes:
    """The ONNX bytes of ``tflite_path``, with the tflite model's names and shapes."""
    import onnx

    from appliance.tools.onnx_layout import restore_tflite_layout

    reference = LiteRTBackend().load(tflite_path)
    inputs = {s.name: s.shape for s in reference.inputs}
    outputs = {s.name: s.shape for s in reference.outputs}
    converter = _tflite2onnx()
    with tempfile.TemporaryDirectory(prefix="mirror-convert-") as tmp:
        target = Path(tmp) / f"{tflite_path.stem}.onnx"
        try:
            with _quiet("tflite2onnx"):
                converter.convert(str(tflite_path), str(target))
        except Exception as exc:  # tflite2onnx raises bare asserts and NotImplementedError
            raise ModelError(f"tflite2onnx cannot convert {tflite_path.name}: {exc!r}") from exc
        model = onnx.load(str(target))
    restore_tflite_layout(model, inputs, outputs)
    names = [o.name for o in model.graph.output]
    if names != [s.name for s in reference.outputs]:
        raise ModelError(f"{tflite_path.name}: ONNX outputs {names} not in tflite order")
    data: bytes = model.SerializeToString()
    check_against_litert(tflite_path, data)
    return data


def check_against_litert(tflite_path: Path, onnx_bytes: bytes, seed: int = 0) -> float:
    """Run both on one fixed input in [-1, 1]; returns the worst relative difference."""
    from appliance.inference.onnx_backend import OnnxBackend

    reference = LiteRTBackend().load(tflite_path)
    with tempfile.TemporaryDirectory(prefix="mirror-check-") as tmp:
        path = Path(tmp) / f"{tflite_path.stem}.onnx"
        path.write_bytes(onnx_bytes)
        candidate = OnnxBackend(("cpu",)).load(path)
        rng = np.random.default_rng(seed)
        feeds = [rng.uniform(-1, 1, s.shape).astype(np.float32) for s in reference.inputs]
        expected, actual = reference.run(feeds), candidate.run(feeds)
    worst = 0.0
    for spec, a, b in zip(reference.outputs, expected, actual, strict=True):
        scale = max(1.0, float(np.abs(a).max()))
        difference = float(np.abs(a - b).max()) / scale
        worst = max(worst, difference)
        if a.shape != b.shape or difference > CHECK_RTOL:
            raise ModelError(
                f"{tflite_path.name}: ONNX output {spec.name} differs from LiteRT "
                f"(shape {b.shape} vs {a.shape}, relative difference {difference:.2e})"
            )
    return worst


def convert_models(
    store: ModelStore,
    out_dir: Path | None = None,
    names: Sequence[str] = CONVERTIBLE,
    progress: Progress | None = None,
) -> ConvertReport:
    """Make (or keep) the fp32 ONNX variant of each named model."""
    say = progress or (lambda _msg: None)
    variants = OnnxVariants(store, out_dir)
    report = ConvertReport()
    tool = tool_version()
    for index, name in enumerate(names, start=1):
        source = store.path(name)
        pinned = store.manifest.entry(name).sha256
        record = variants.read()
        if variants.is_current(record.variants.get(name), pinned):
            say(f"[{index}/{len(names)}] {name}: ONNX variant present and verified")
            report.unchanged.append(name)
            continue
        say(f"[{index}/{len(names)}] {name}: converting {source.name} with {tool}")
        data = tflite_to_onnx(source)
        file = f"{name}.onnx"
        atomic_write_bytes(variants.directory / file, data)
        entry = Variant(
            model=name,
            precision="fp32",
            file=file,
            sha256=sha256_bytes(data),
            source=source.name,
            source_sha256=pinned,
            tool=tool,
        )
        record = variants.read()
        variants.write(record.model_copy(update={"variants": {**record.variants, name: entry}}))
        say(f"[{index}/{len(names)}] {name}: {file} written ({len(data) / 1e6:.1f} MB)")
        report.converted.append(name)
    return report
