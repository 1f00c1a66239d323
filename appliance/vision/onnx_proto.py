"""Write a small ONNX model (the protobuf bytes) without the onnx package.

Only what a feed-forward image network needs: nodes with int, float and int-list
attributes, float32 initializers, one float32 input and output of fixed shape.
The bytes load in OpenCV's DNN module (always installed) and in onnxruntime.
Field numbers are those of onnx.proto (proto2: repeated numbers are written
unpacked, which every parser reads).
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

logger = logging.getLogger(__name__)

IR_VERSION = 7
OPSET = 13
_FLOAT, _INT64 = 1, 7  # TensorProto.DataType
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7  # AttributeProto.AttributeType

Attribute = int | float | tuple[int, ...] | str


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # a negative int64 as its two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _int(number: int, value: int) -> bytes:
    return _key(number, 0) + _varint(value)


def _bytes(number: int, value: bytes) -> bytes:
    return _key(number, 2) + _varint(len(value)) + value


def _str(number: int, value: str) -> bytes:
    return _bytes(number, value.encode())


def _attribute(name: str, value: Attribute) -> bytes:
    out = _str(1, name)
    if isinstance(value, tuple):
        return out + b"".join(_int(8, v) for v in value) + _int(20, _ATTR_INTS)
    if isinstance(value, float):
        return out + _key(2, 5) + struct.pack("<f", value) + _int(20, _ATTR_FLOAT)
    if isinstance(value, str):
        return out + _bytes(4, value.encode()) + _int(20, 3)
    return out + _int(3, value) + _int(20, _ATTR_INT)


def _tensor(name: str, array: npt.NDArray[np.float32] | npt.NDArray[np.int64]) -> bytes:
    kind = _INT64 if array.dtype == np.int64 else _FLOAT
    data = np.ascontiguousarray(array, "<i8" if kind == _INT64 else "<f4").tobytes()
    dims = b"".join(_int(1, d) for d in array.shape)
    return dims + _int(2, kind) + _str(8, name) + _bytes(9, data)


def _value_info(name: str, shape: tuple[int, ...]) -> bytes:
    dims = b"".join(_bytes(1, _int(1, d)) for d in shape)
    tensor_type = _int(1, _FLOAT) + _bytes(2, dims)
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


@dataclass
class Graph:
    """Nodes and initializers, added in order; ``model_bytes`` writes the model."""

    name: str
    nodes: list[bytes] = field(default_factory=list)
    initializers: list[bytes] = field(default_factory=list)
    _count: int = 0

    def constant(self, array: npt.NDArray[np.float32] | npt.NDArray[np.int64]) -> str:
        """An initializer holding ``array``; its name."""
        name = f"w{len(self.initializers)}"
        self.initializers.append(_tensor(name, array))
        return name

    def node(self, op: str, inputs: list[str], **attributes: Attribute) -> str:
        """Add an ``op`` node of one output; the output's name."""
        self._count += 1
        output = f"{op.lower()}{self._count}"
        body = b"".join(_str(1, i) for i in inputs) + _str(2, output)
        body += _str(3, output) + _str(4, op)
        body += b"".join(_bytes(5, _attribute(k, v)) for k, v in attributes.items())
        self.nodes.append(body)
        return output

    def model_bytes(
        self, source: str, shape: tuple[int, ...], result: str, result_shape: tuple[int, ...]
    ) -> bytes:
        """The model with input ``source`` of ``shape`` and output ``result``."""
        graph = b"".join(_bytes(1, n) for n in self.nodes) + _str(2, self.name)
        graph += b"".join(_bytes(5, t) for t in self.initializers)
        graph += _bytes(11, _value_info(source, shape))
        graph += _bytes(12, _value_info(result, result_shape))
        opset = _str(1, "") + _int(2, OPSET)
        model = _int(1, IR_VERSION) + _str(2, "face-mirror") + _bytes(7, graph) + _bytes(8, opset)
        logger.debug("%s: %d nodes, %.1f MB", self.name, len(self.nodes), len(model) / 1e6)
        return model
