"""Read a PyTorch checkpoint of the legacy format (before torch 1.6) without torch.

The format is five pickles in a row (a magic number, the protocol version, system
information, the state dict, the list of storage keys) and then each storage's raw
bytes (an 8-byte element count, then the elements). The state dict's pickle names
only ``collections.OrderedDict``, ``torch._utils._rebuild_tensor_v2`` and storage
types; the unpickler here knows those and nothing else, so no code in the file can
run. Each tensor comes back as a float32 (or int64) numpy array.
"""

from __future__ import annotations

import io
import logging
import pickle
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from appliance.errors import ModelError

logger = logging.getLogger(__name__)

MAGIC = 0x1950A86A20F9469CFC6C
PROTOCOL = 1001
_DTYPES: dict[str, np.dtype[Any]] = {
    "FloatStorage": np.dtype("<f4"),
    "LongStorage": np.dtype("<i8"),
    "IntStorage": np.dtype("<i4"),
}

Weights = dict[str, npt.NDArray[Any]]


@dataclass(frozen=True)
class _Storage:
    key: str
    dtype: np.dtype[Any]


@dataclass(frozen=True)
class _Tensor:
    storage: _Storage
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]


def _rebuild_tensor_v2(storage: _Storage, offset: int, size: Any, stride: Any, *_: Any) -> _Tensor:
    return _Tensor(storage, int(offset), tuple(size), tuple(stride))


class _StorageType:
    def __init__(self, name: str) -> None:
        self.name = name


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor_v2
        if module == "torch" and name in _DTYPES:
            return _StorageType(name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a weights file")

    def persistent_load(self, pid: Any) -> _Storage:
        kind, storage_type, key = pid[0], pid[1], pid[2]
        if kind != "storage" or not isinstance(storage_type, _StorageType):
            raise pickle.UnpicklingError(f"unexpected persistent id {pid[:2]!r}")
        return _Storage(str(key), _DTYPES[storage_type.name])


def read_legacy_checkpoint(data: bytes, source: str = "checkpoint") -> Weights:
    """The state dict in ``data`` (a legacy-format ``.pth``) as numpy arrays by name."""
    try:
        return _read(io.BytesIO(data))
    except (pickle.UnpicklingError, EOFError, ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"{source}: not a readable legacy PyTorch state dict ({exc})") from exc


def _read(stream: io.BytesIO) -> Weights:
    if _Unpickler(stream).load() != MAGIC:
        raise ValueError("no legacy magic number (a zip checkpoint of torch 1.6+?)")
    if _Unpickler(stream).load() != PROTOCOL:
        raise ValueError("unknown protocol version")
    _Unpickler(stream).load()  # system information (byte order, sizes)
    state = _Unpickler(stream).load()
    keys = _Unpickler(stream).load()
    if not isinstance(state, dict):
        raise TypeError("the checkpoint is not a state dict")
    storages = {t.storage.key: t.storage for t in state.values() if isinstance(t, _Tensor)}
    raw: dict[str, npt.NDArray[Any]] = {}
    for key in keys:
        count = int(np.frombuffer(stream.read(8), "<i8")[0])
        dtype = storages[key].dtype if key in storages else np.dtype("<f4")
        buffer = stream.read(count * dtype.itemsize)
        if len(buffer) != count * dtype.itemsize:
            raise ValueError(f"storage {key} is cut short")
        raw[key] = np.frombuffer(buffer, dtype)
    out: Weights = {}
    for name, tensor in state.items():
        if isinstance(tensor, _Tensor):
            out[name] = _view(raw[tensor.storage.key], tensor)
    logger.debug("read %d tensors", len(out))
    return out


def _view(flat: npt.NDArray[Any], tensor: _Tensor) -> npt.NDArray[Any]:
    size = flat.dtype.itemsize
    last = tensor.offset + sum((d - 1) * s for d, s in zip(tensor.size, tensor.stride, strict=True))
    if tensor.offset < 0 or min(tensor.stride, default=0) < 0 or last >= len(flat):
        raise ValueError(f"a tensor of shape {tensor.size} reaches past its storage")
    strided = np.lib.stride_tricks.as_strided(
        flat[tensor.offset :],
        shape=tensor.size,
        strides=tuple(s * size for s in tensor.stride),
        writeable=False,
    )
    return np.array(strided, dtype=np.float32 if flat.dtype.kind == "f" else flat.dtype)
