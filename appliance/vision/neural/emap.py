"""inswapper's ``emap``: read once at provisioning with ``onnx``, kept beside the model.

inswapper_128 expects as ``source`` the normalised ArcFace embedding times a
512x512 matrix, the model graph's last initializer. Reading it needs the
``onnx`` package and the whole (554 MB) model in memory, so it is done at
provisioning: ``extract_emap`` writes ``<stem>.emap.npy`` beside the model
(atomically) and the runtime only ``numpy.load``s it.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path

import numpy as np
import numpy.typing as npt

from appliance.errors import MissingExtraError, ModelError, ModelMissingError
from appliance.fileio import atomic_write_bytes

logger = logging.getLogger(__name__)

EMAP_SHAPE = (512, 512)

Matrix = npt.NDArray[np.float32]


def emap_path(model_path: Path) -> Path:
    """Where a model's emap lives: ``inswapper_128.onnx`` -> ``inswapper_128.emap.npy``."""
    return Path(model_path).with_suffix(".emap.npy")


def extract_emap(model_path: Path, out_path: Path | None = None) -> Path:
    """Write the model's last graph initializer (512x512, float32) as ``.npy``; its path."""
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as exc:
        raise MissingExtraError(
            "extracting inswapper's emap needs the onnx package: pip install onnx"
        ) from exc
    model_path = Path(model_path)
    out = Path(out_path) if out_path is not None else emap_path(model_path)
    try:
        graph = onnx.load(str(model_path)).graph
    except FileNotFoundError as exc:
        raise ModelMissingError(f"{model_path}: no such model file") from exc
    except Exception as exc:  # onnx raises DecodeError and friends, untyped
        raise ModelError(f"{model_path}: not a readable ONNX model ({type(exc).__name__})") from exc
    if not graph.initializer:
        raise ModelError(f"{model_path}: the graph has no initializers, so no emap")
    matrix = np.asarray(numpy_helper.to_array(graph.initializer[-1]), np.float32)
    _check(matrix, model_path)
    buffer = io.BytesIO()
    np.save(buffer, matrix, allow_pickle=False)
    atomic_write_bytes(out, buffer.getvalue())
    logger.info("wrote emap of %s to %s", model_path.name, out)
    return out


def load_emap(path: Path) -> Matrix:
    """The emap written by ``extract_emap``, checked for shape and finite values."""
    path = Path(path)
    try:
        matrix = np.load(path, allow_pickle=False)
    except FileNotFoundError as exc:
        missing = ModelMissingError(
            f"{path} is missing: extract the emap at provisioning (extract_emap)"
        )
        missing.filename = str(path)
        raise missing from exc
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path}: not a readable .npy file ({exc})") from exc
    matrix = np.asarray(matrix, np.float32)
    _check(matrix, path)
    return matrix


def _check(matrix: Matrix, source: Path) -> None:
    if matrix.shape != EMAP_SHAPE:
        raise ModelError(
            f"{source}: the emap (last initializer) has shape {matrix.shape}, "
            f"expected {EMAP_SHAPE}; is this inswapper_128?"
        )
    if not np.isfinite(matrix).all():
        raise ModelError(f"{source}: the emap holds NaN or infinite values")
