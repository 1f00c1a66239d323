"""The backends are named in one module, and one onnxruntime runner serves every model.

The names (``tensorrt``, ``cuda``, ``edgetpu``, ``litert-cpu``, ``onnx-cpu``) and
onnxruntime's provider short names live in ``appliance/backend_names.py``: the
profile schema, the backend probe and the model resolver all take them from
there. The neural swappers run on ``inference/onnx_backend``'s ``OnnxBackend``
like the detector variants; nothing else in the runtime opens onnxruntime.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from appliance.backend_names import BACKEND_NAMES, PROVIDER_CHAINS, PROVIDERS, BackendName
from appliance.device.profile import HardwareProfile
from appliance.errors import BackendError
from appliance.inference.onnx_backend import OnnxBackend
from appliance.inference.select import PROBES
from appliance.vision.neural.chooser import cpu_backend

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("appliance", "web_ui", "provisioning")
# "cpu" alone is too common a word (an install extra, a sensor) to look for.
NAMES = {*BACKEND_NAMES, *PROVIDERS, "onnxruntime-cpu"} - {"cpu"}
# Arguments that are not backend names though they read like one (the libcuda library).
# calls whose string names a shared library or a Python module (``tensorrt``), not a backend
NOT_NAMES = {"_library_found", "find_library", "importable"}


def _sources() -> list[Path]:
    return [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]


def _literals(tree: ast.AST) -> list[ast.Constant]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name in NOT_NAMES:
                skip.update(id(arg) for arg in node.args)
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
    ]


def test_backend_names_are_written_in_one_module() -> None:
    written: list[str] = []
    for path in _sources():
        if path.name == "backend_names.py":
            continue
        for node in _literals(ast.parse(path.read_text(encoding="utf-8"))):
            if str(node.value).lower() in NAMES:
                written.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
    assert written == []


def test_the_schema_and_the_probe_take_the_same_names() -> None:
    assert HardwareProfile.model_fields["backends"].annotation == tuple[BackendName, ...]
    assert tuple(PROBES) == BACKEND_NAMES == get_args(BackendName)
    assert set(PROVIDER_CHAINS) < set(BACKEND_NAMES)


def test_only_the_onnx_backend_opens_onnxruntime_in_the_runtime() -> None:
    importers = []
    for path in _sources():
        if "tools" in path.parts:  # quantisation is a tool, not the runtime
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] == "onnxruntime" for n in names):
                importers.append(str(path.relative_to(ROOT)))
    assert importers == ["appliance/inference/onnx_backend.py"]


def test_the_neural_swappers_default_runner_is_the_onnx_backend_on_the_cpu() -> None:
    runner = cpu_backend()
    assert isinstance(runner, OnnxBackend)
    assert runner.providers == ("cpu",) and runner.name == "onnx-cpu"
    assert runner.num_threads is None  # every core, as the neural swapper had


def _reshape_model(path: Path) -> Path:
    """Any length in, a 2x2 out: a length other than 4 fails inside onnxruntime's run."""
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        "reshape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor("shape", TensorProto.INT64, [2], [2, 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_a_failed_run_is_a_backend_error_the_swapper_can_fall_back_on(tmp_path: Path) -> None:
    model = cpu_backend().load(_reshape_model(tmp_path / "reshape.onnx"))
    assert model.inputs[0].shape == (-1,)
    out = model.run([np.arange(4, dtype=np.float32)])
    assert out[0].shape == (2, 2) and out[0].dtype == np.float32
    with pytest.raises(BackendError, match=r"reshape\.onnx: onnxruntime run failed"):
        model.run([np.arange(3, dtype=np.float32)])
