"""Int8 ONNX variants for ARM CPUs, kept only when landmarks move less than 1 px.

Static quantisation (onnxruntime, QDQ, per-channel int8 weights, uint8
activations, percentile calibration) on the tensors the models really get
from the test photos. Each candidate is compared with its fp32 variant on the
photos in image pixels: detector boxes and keypoints, mesh landmarks. Under
``MAX_ERROR_PX`` it is written and recorded; otherwise it is recorded as
rejected with the error and the photo, and not made again for the same fp32.
"""

from __future__ import annotations

import contextlib
import io
import logging
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from appliance.errors import MissingExtraError, ModelError
from appliance.fileio import atomic_write_bytes
from appliance.inference.base import Model
from appliance.inference.litert import LiteRTBackend
from appliance.inference.onnx_backend import OnnxBackend
from appliance.modelstore.hashing import sha256_bytes
from appliance.modelstore.onnx_variants import OnnxVariants, Rejected, Variant, variant_key
from appliance.tools.variant_check import (
    DETECTOR_KIND,
    Comparison,
    Photo,
    RecordingModel,
    compare,
    detections,
    face_rois,
    mesh_points,
)

logger = logging.getLogger(__name__)

MAX_ERROR_PX = 1.0
QDQ_OPSET = 13  # per-channel DequantizeLinear needs opset 13; tflite2onnx writes 11

Progress = Callable[[str], None]


@dataclass
class Int8Report:
    kept: dict[str, float] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)
    unchanged: list[str] = field(default_factory=list)
    # Every candidate made in this run, kept or not (for benchmarks).
    candidates: dict[str, bytes] = field(default_factory=dict)


def tool_version() -> str:
    import onnxruntime

    return f"onnxruntime {onnxruntime.__version__} quantize_static QDQ per-channel percentile"


class _Feeds:
    """onnxruntime's CalibrationDataReader protocol over recorded feeds."""

    def __init__(self, name: str, feeds: list[npt.NDArray[np.float32]]) -> None:
        self._items: Iterator[dict[str, npt.NDArray[np.float32]]] = iter([{name: f} for f in feeds])

    def get_next(self) -> dict[str, npt.NDArray[np.float32]] | None:
        return next(self._items, None)


def calibration_feeds(
    model_name: str, fp32: Model, photos: Sequence[Photo], detector: Model
) -> list[npt.NDArray[np.float32]]:
    """The tensors ``fp32`` is fed when it runs on the photos."""
    recorder = RecordingModel(fp32)
    if model_name in DETECTOR_KIND:
        for photo in photos:
            detections(recorder, DETECTOR_KIND[model_name], photo.image)
    else:
        for photo, roi in face_rois(detector, photos):
            mesh_points(recorder, photo.image, roi)
    return [feeds[0] for feeds in recorder.feeds]


def quantize(fp32_path: Path, input_name: str, feeds: list[npt.NDArray[np.float32]]) -> bytes:
    """The int8 QDQ model of ``fp32_path`` calibrated on ``feeds``."""
    try:
        import onnx
        from onnx import version_converter
        from onnxruntime.quantization import (
            CalibrationMethod,
            QuantFormat,
            QuantType,
            quantize_static,
        )
        from onnxruntime.quantization.shape_inference import quant_pre_process
    except ImportError as exc:  # pragma: no cover - onnx comes with the convert extra
        raise MissingExtraError(
            f"int8 variants need onnx ({exc}); pip install -e '.[convert]'"
        ) from exc
    with tempfile.TemporaryDirectory(prefix="mirror-int8-") as tmp:
        upgraded, prepared = Path(tmp) / "opset.onnx", Path(tmp) / "prepared.onnx"
        target = Path(tmp) / "int8.onnx"
        model = version_converter.convert_version(onnx.load(str(fp32_path)), QDQ_OPSET)
        onnx.save(model, str(upgraded))
        # Shapes are static: onnx shape inference is enough (the symbolic one needs sympy).
        quant_pre_process(str(upgraded), str(prepared), skip_symbolic_shape=True)
        try:
            # The calibrator prints its progress; keep it off the command's stdout.
            with contextlib.redirect_stdout(io.StringIO()):
                quantize_static(
                    str(prepared),
                    str(target),
                    _Feeds(input_name, feeds),
                    quant_format=QuantFormat.QDQ,
                    per_channel=True,
                    activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.Percentile,
                )
        except Exception as exc:  # onnxruntime raises its own untyped exceptions
            raise ModelError(f"cannot quantise {fp32_path.name}: {exc!r}") from exc
        return target.read_bytes()


def _load(data: bytes, directory: Path, name: str) -> Model:
    path = directory / name
    path.write_bytes(data)
    return OnnxBackend(("cpu",)).load(path)


def make_int8(
    variants: OnnxVariants, model_name: str, photos: Sequence[Photo], report: Int8Report
) -> None:
    """Make, measure, then keep or reject the int8 variant of one fp32 variant."""
    key = variant_key(model_name, "int8")
    fp32_path = variants.path(model_name)
    record = variants.read()
    fp32_sha = record.variants[model_name].sha256
    rejected = record.rejected.get(key)
    if variants.is_current(record.variants.get(key), fp32_sha) or (
        rejected is not None and rejected.source_sha256 == fp32_sha
    ):
        report.unchanged.append(key)
        return
    detector = LiteRTBackend().load(variants.store.path("face_detector_short"))
    fp32 = OnnxBackend(("cpu",)).load(fp32_path)
    feeds = calibration_feeds(model_name, fp32, photos, detector)
    data = quantize(fp32_path, fp32.inputs[0].name, feeds)
    report.candidates[key] = data
    with tempfile.TemporaryDirectory(prefix="mirror-int8-") as tmp:
        int8 = _load(data, Path(tmp), f"{key}.onnx")
        result = compare(model_name, fp32, int8, photos, face_rois(detector, photos))
    _record(
        variants,
        model_name,
        source=fp32_path.name,
        fp32_sha=fp32_sha,
        data=data,
        result=result,
        report=report,
    )


def _record(
    variants: OnnxVariants,
    model_name: str,
    *,
    source: str,
    fp32_sha: str,
    data: bytes,
    result: Comparison,
    report: Int8Report,
) -> None:
    key = variant_key(model_name, "int8")
    error_px = result.worst_px
    record = variants.read()
    kept = dict(record.variants)
    rejected = dict(record.rejected)
    kept.pop(key, None)
    rejected.pop(key, None)
    if error_px < MAX_ERROR_PX:
        file = f"{key}.onnx"
        atomic_write_bytes(variants.directory / file, data)
        kept[key] = Variant(
            model=model_name,
            precision="int8",
            file=file,
            sha256=sha256_bytes(data),
            source=source,
            source_sha256=fp32_sha,
            tool=tool_version(),
            max_error_px=error_px,
        )
        report.kept[key] = error_px
    else:
        reason = (
            f"max error {error_px:.2f} px vs fp32 (limit {MAX_ERROR_PX:.0f} px)"
            if np.isfinite(error_px)
            else "finds a different number of faces than fp32"
        ) + f", worst on {result.worst_photo}"
        rejected[key] = Rejected(
            model=model_name,
            source_sha256=fp32_sha,
            tool=tool_version(),
            max_error_px=error_px if np.isfinite(error_px) else 1e9,
            reason=reason,
        )
        (variants.directory / f"{key}.onnx").unlink(missing_ok=True)
        report.rejected[key] = reason
    variants.write(record.model_copy(update={"variants": kept, "rejected": rejected}))


def make_int8_variants(
    variants: OnnxVariants,
    names: Sequence[str],
    photos: Sequence[Photo],
    progress: Progress | None = None,
) -> Int8Report:
    say = progress or (lambda _msg: None)
    report = Int8Report()
    for index, name in enumerate(names, start=1):
        say(f"[{index}/{len(names)}] {name}: int8 variant")
        make_int8(variants, name, photos, report)
        key = variant_key(name, "int8")
        if key in report.kept:
            say(
                f"    kept: measured on {len(photos)} photo(s), max error {report.kept[key]:.2f} px"
            )
        elif key in report.rejected:
            say(f"    rejected: measured on {len(photos)} photo(s), {report.rejected[key]}")
        else:
            say(f"    unchanged: {_earlier(variants, key)}")
    return report


def _earlier(variants: OnnxVariants, key: str) -> str:
    record = variants.read()
    if key in record.variants:
        return f"kept earlier, max error {record.variants[key].max_error_px or 0.0:.2f} px"
    if key in record.rejected:
        return f"rejected earlier: {record.rejected[key].reason}"
    return "no record"
