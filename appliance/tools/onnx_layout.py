"""Give a converted ONNX graph back the tensor layout of its tflite source.

``tflite2onnx`` turns the graph to NCHW, model inputs and outputs included
(``input [1,3,128,128]``, ``conv2d_20 [1,1404,1,1]``). The vision code feeds
NHWC tensors and reads outputs by the tflite shapes, so each interface tensor
whose shape is the NCHW image of its tflite shape gets a Transpose: the ONNX
variant then has the very names and shapes of the tflite model.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import onnx
from onnx import helper

from appliance.errors import ModelError

logger = logging.getLogger(__name__)

Shapes = Mapping[str, tuple[int, ...]]
TO_NCHW = (0, 3, 1, 2)
TO_NHWC = (0, 2, 3, 1)


def _dims(value: onnx.ValueInfoProto) -> tuple[int, ...]:
    return tuple(int(d.dim_value) for d in value.type.tensor_type.shape.dim)


def _set_dims(value: onnx.ValueInfoProto, shape: tuple[int, ...]) -> None:
    tensor_shape = value.type.tensor_type.shape
    tensor_shape.ClearField("dim")
    for size in shape:
        tensor_shape.dim.add().dim_value = size


def _needs_transpose(name: str, have: tuple[int, ...], want: tuple[int, ...]) -> bool:
    if have == want:
        return False
    if len(want) == 4 and have == tuple(want[i] for i in TO_NCHW):
        return True
    raise ModelError(f"converted tensor {name} has shape {have}, tflite has {want}: cannot map")


def _rename_uses(graph: onnx.GraphProto, old: str, new: str, *, outputs: bool) -> None:
    """Point the nodes (and the shape record) of tensor ``old`` at ``new``."""
    for value in graph.value_info:
        if value.name == old:
            value.name = new
    for node in graph.node:
        names = node.output if outputs else node.input
        for i, name in enumerate(names):
            if name == old:
                names[i] = new


def restore_tflite_layout(model: onnx.ModelProto, inputs: Shapes, outputs: Shapes) -> int:
    """Add the Transposes in place; returns how many were needed."""
    graph = model.graph
    head: list[onnx.NodeProto] = []
    tail: list[onnx.NodeProto] = []
    for value in graph.input:
        if value.name not in inputs or not _needs_transpose(
            value.name, _dims(value), inputs[value.name]
        ):
            continue
        inner = f"{value.name}__nchw"
        _rename_uses(graph, value.name, inner, outputs=False)
        head.append(helper.make_node("Transpose", [value.name], [inner], perm=TO_NCHW, name=inner))
        _set_dims(value, inputs[value.name])
    for value in graph.output:
        if value.name not in outputs or not _needs_transpose(
            value.name, _dims(value), outputs[value.name]
        ):
            continue
        inner = f"{value.name}__nchw"
        _rename_uses(graph, value.name, inner, outputs=True)
        tail.append(
            helper.make_node("Transpose", [inner], [value.name], perm=TO_NHWC, name=f"{inner}_out")
        )
        _set_dims(value, outputs[value.name])
    nodes = [*head, *graph.node, *tail]
    interface = {v.name for v in graph.input} | {v.name for v in graph.output}
    shapes = [v for v in graph.value_info if v.name not in interface]
    graph.ClearField("value_info")
    graph.value_info.extend(shapes)
    graph.ClearField("node")
    graph.node.extend(nodes)
    missing = (set(inputs) - {v.name for v in graph.input}) | (
        set(outputs) - {v.name for v in graph.output}
    )
    if missing:
        raise ModelError(f"converted graph lacks tflite tensors {sorted(missing)}")
    onnx.checker.check_model(model, full_check=True)
    logger.debug("restored NHWC layout with %d transposes", len(head) + len(tail))
    return len(head) + len(tail)
