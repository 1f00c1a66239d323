"""Where TensorRT's engines and timing cache live, one folder per model and TensorRT, pruned.

TensorRT reuses a serialized engine or timing cache only with the exact version that
made it (its docs: major, minor, patch and build must match), and onnxruntime asks
that its caches be cleared when onnxruntime itself changes. So each model's folder
is keyed by the model's sha256 and by the TensorRT and onnxruntime versions that
run it::

    <data dir>/trt-cache/<sha256[:16]>-trt<TensorRT>-ort<onnxruntime>/

:func:`prune` removes the folders of other versions (an upgraded TensorRT or
onnxruntime leaves engines nothing can load) and keeps the current version's,
whichever model they are for. With the TensorRT version unknown nothing is removed.
"""

from __future__ import annotations

import logging
import re
import shutil
import threading
from pathlib import Path

from appliance.inference.gpu_libs import tensorrt_version
from appliance.paths import data_dir

logger = logging.getLogger(__name__)

UNKNOWN = "unknown"
FOLDER = "trt-cache"
ENGINE_GLOB = "*.engine"
_KEYED = re.compile(r"^[0-9a-f]{16}-(trt.+)$")
_pruned: set[tuple[Path, str]] = set()
_lock = threading.Lock()


def onnxruntime_version() -> str:
    from appliance.inference.onnx_backend import onnxruntime_module  # the one that opens it

    ort = onnxruntime_module()
    return UNKNOWN if ort is None else str(ort.__version__)


def version_key(trt: str | None = None, ort: str | None = None) -> str:
    """``trt<TensorRT>-ort<onnxruntime>``: the versions an engine is good for."""
    return f"trt{trt or tensorrt_version() or UNKNOWN}-ort{ort or onnxruntime_version()}"


def cache_root(base: Path | None = None) -> Path:
    return base or data_dir() / FOLDER


def trt_cache_dir(model_sha256: str, base: Path | None = None, version: str | None = None) -> Path:
    """The model's folder for this TensorRT and onnxruntime (``version``: a ``version_key``)."""
    return cache_root(base) / f"{model_sha256[:16]}-{version or version_key()}"


def has_engine(folder: Path) -> bool:
    """Whether an engine was built into ``folder`` already (onnxruntime's ``*.engine``)."""
    return folder.is_dir() and any(folder.glob(ENGINE_GLOB))


def prune(base: Path | None = None, version: str | None = None) -> list[Path]:
    """Remove the cache folders made for another TensorRT or onnxruntime; returns them.

    Done once per folder and version in a process; a folder that cannot be removed
    (another user's) is logged and left.
    """
    root = cache_root(base)
    key = version or version_key()
    if UNKNOWN in key.split("-", 1)[0] or not root.is_dir():
        return []
    with _lock:
        if (root, key) in _pruned:
            return []
        _pruned.add((root, key))
    removed: list[Path] = []
    for folder in sorted(root.iterdir()):
        keyed = _KEYED.match(folder.name)
        if not folder.is_dir() or keyed is None or keyed.group(1) == key:
            continue
        try:
            shutil.rmtree(folder)
        except OSError as exc:
            logger.warning("cannot remove the old TensorRT cache %s: %s", folder, exc)
            continue
        logger.info("removed the TensorRT cache of another version: %s", folder.name)
        removed.append(folder)
    return removed
