"""Backend fallbacks, verified on this CPU machine: nothing asked for is assumed to run.

TensorRT and CUDA asked here end on the CPU with the reasons recorded; the
Edge TPU delegate (the real one, which has no library or TPU here, and a fake
that fails the way it fails on a device with no TPU attached) ends on the CPU
tflite with the reason.
"""

from __future__ import annotations

import shutil
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from appliance.errors import BackendFallbackWarning, ConfigError
from appliance.inference.edgetpu import (
    EdgeTpuBackend,
    _dequantize,
    _quantize,
    edgetpu_variant,
)
from appliance.inference.edgetpu_probe import first_invoke_fails, forget_probes
from appliance.inference.fallbacks import clear_fallbacks, fallbacks
from appliance.inference.litert import LiteRTBackend
from appliance.inference.onnx_backend import DROPPED_REASON, OnnxBackend, trt_cache_dir
from appliance.inference.select import FALLBACK_SUBJECT, choose_backend
from appliance.modelstore import ModelStore
from appliance.modelstore.hashing import sha256_file
from appliance.modelstore.onnx_variants import OnnxVariants
from appliance.tools.convert import convert_models

GPU_PROVIDERS = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]


@pytest.fixture(autouse=True)
def _fresh_fallbacks() -> Iterator[None]:
    clear_fallbacks()
    forget_probes()
    yield
    clear_fallbacks()
    forget_probes()


@pytest.fixture(scope="module")
def detector_onnx(store: ModelStore, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("onnx")
    convert_models(store, out, names=["face_detector_short"])
    return OnnxVariants(store, out).path("face_detector_short")


def _by_wanted(subject: str) -> dict[str, str]:
    return {f.wanted: f.reason for f in fallbacks() if f.subject == subject}


def test_tensorrt_and_cuda_asked_end_on_cpu_with_reasons(
    detector_onnx: Path, tmp_path: Path
) -> None:
    backend = OnnxBackend(("tensorrt", "cuda", "cpu"), cache_dir=tmp_path)
    with pytest.warns(BackendFallbackWarning):
        model = backend.load(detector_onnx)
    assert model.providers == ("CPUExecutionProvider",)
    assert model.backend_name == "onnx-cpu"
    reasons = _by_wanted(detector_onnx.name)
    assert set(reasons) == {"TensorrtExecutionProvider", "CUDAExecutionProvider"}
    assert all("not in this onnxruntime build" in r for r in reasons.values())
    assert {f.used for f in fallbacks()} == {"CPUExecutionProvider"}
    regressors, logits = model.run([np.zeros((1, 128, 128, 3), np.float32)])
    assert regressors.shape == (1, 896, 16) and logits.shape == (1, 896, 1)


def test_provider_dropped_by_onnxruntime_is_caught(detector_onnx: Path, tmp_path: Path) -> None:
    """A provider that onnxruntime claims and then silently drops is still reported."""
    backend = OnnxBackend(cache_dir=tmp_path, available=lambda: GPU_PROVIDERS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # onnxruntime's own note about it
        model = backend.load(detector_onnx)
    assert model.providers == ("CPUExecutionProvider",)
    reasons = _by_wanted(detector_onnx.name)
    assert reasons == {
        "TensorrtExecutionProvider": DROPPED_REASON,
        "CUDAExecutionProvider": DROPPED_REASON,
    }
    expected_cache = trt_cache_dir(sha256_file(detector_onnx), tmp_path)
    assert expected_cache.is_dir(), "TensorRT caches live under the data dir, keyed by model hash"
    assert expected_cache.name.startswith(sha256_file(detector_onnx)[:16] + "-trt")


def test_fallback_is_warned_once(detector_onnx: Path) -> None:
    backend = OnnxBackend(("cuda", "cpu"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backend.load(detector_onnx)
        backend.load(detector_onnx)
    assert len([w for w in caught if w.category is BackendFallbackWarning]) == 1
    assert len(fallbacks()) == 1


def test_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="rocm"):
        OnnxBackend(("rocm", "cpu"))


def test_choose_backend_ends_on_onnx_cpu_with_reasons() -> None:
    with pytest.warns(BackendFallbackWarning):
        backend, attempts = choose_backend(["tensorrt", "cuda", "onnx-cpu"])
    assert isinstance(backend, OnnxBackend) and backend.providers == ("cpu",)
    assert [(a.name, a.ok) for a in attempts] == [
        ("tensorrt", False),
        ("cuda", False),
        ("onnx-cpu", True),
    ]
    assert "TensorrtExecutionProvider" in attempts[0].reason
    assert "CUDAExecutionProvider" in attempts[1].reason
    recorded = _by_wanted(FALLBACK_SUBJECT)
    assert recorded == {"tensorrt": attempts[0].reason, "cuda": attempts[1].reason}


def test_choose_backend_without_edge_tpu_ends_on_litert_cpu() -> None:
    with pytest.warns(BackendFallbackWarning):
        backend, attempts = choose_backend(["edgetpu", "litert-cpu"])
    assert isinstance(backend, LiteRTBackend)
    assert [(a.name, a.ok) for a in attempts] == [("edgetpu", False), ("litert-cpu", True)]
    assert "libedgetpu.so.1" in attempts[0].reason


def test_choose_backend_refuses_unknown_names() -> None:
    with pytest.raises(ConfigError, match="opencl"):
        choose_backend(["opencl", "litert-cpu"])


def _failing_delegate(library: str) -> object:
    # What LiteRT's load_delegate raises when the library loads but no TPU is attached.
    raise ValueError(f"Failed to load delegate from {library}\n")


@pytest.fixture
def tflite_pair(store: ModelStore, tmp_path: Path) -> Path:
    """A CPU model with an ``_edgetpu`` file beside it (a copy: no TPU compiler here)."""
    cpu = tmp_path / "face_detector.tflite"
    shutil.copy2(store.path("face_detector_short"), cpu)
    shutil.copy2(cpu, edgetpu_variant(cpu))
    return cpu


@pytest.fixture
def library(tmp_path: Path) -> str:
    """An installed libedgetpu as the probe finds it: a file at its path (this machine has
    none; what loading it does is the probe child's, injected or real)."""
    path = tmp_path / "lib" / "libedgetpu.so.1"
    path.parent.mkdir()
    path.write_bytes(b"not an ELF library\n")
    return str(path)


def _child(code: str) -> list[str]:
    """A probe child running ``code`` (no core file: the crash is on purpose)."""
    quiet = "import resource; resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); "
    return [sys.executable, "-c", quiet + code]


# The probe child is run as COMMAND [MODEL] --library LIB: with no model it only loads the
# delegate (the backend's probe), with one it invokes it once (the first load).
WITH_MODEL = "import sys; invoke = sys.argv[1] != '--library'; "
NO_TPU = "import sys; print('ValueError: Failed to load delegate from X', file=sys.stderr); "


def test_edgetpu_delegate_failing_ends_on_cpu_tflite(tflite_pair: Path, library: str) -> None:
    loads: list[str] = []
    backend = EdgeTpuBackend(
        delegate_loader=loads.append, library=library, probe_command=_child(NO_TPU + "exit(1)")
    )
    with pytest.warns(BackendFallbackWarning, match="Failed to load delegate"):
        model = backend.load(tflite_pair)
    assert model.backend_name == "litert-cpu"
    assert model.path == tflite_pair, "the CPU model runs, not the _edgetpu one"
    [fallback] = fallbacks()
    assert (fallback.wanted, fallback.used) == ("edgetpu", "litert-cpu")
    assert "Failed to load delegate from X" in fallback.reason
    assert loads == [], "this process never loaded the delegate"


def test_the_service_never_loads_the_delegate_before_a_child_has(
    library: str, tmp_path: Path
) -> None:
    # libedgetpu may crash the process that loads its delegate: the probe is a child's.
    argv = tmp_path / "argv"
    loads: list[str] = []
    record = f"import sys; open({str(argv)!r}, 'w').write(repr(sys.argv[1:])); "
    crash = _child(record + "import ctypes; ctypes.string_at(0)")
    backend = EdgeTpuBackend(delegate_loader=loads.append, library=library, probe_command=crash)
    assert backend.probe() == "Edge TPU probe crashed (SIGSEGV): using the CPU model"
    assert loads == [], "the delegate was not loaded in this process"
    assert argv.read_text() == repr(["--library", library]), "a load-only child, no model"


def test_the_real_probe_child_loads_the_library_and_says_why_not(
    tflite_pair: Path, library: str
) -> None:
    backend = EdgeTpuBackend(library=library)  # python -m appliance.inference.edgetpu_probe
    reason = backend.probe() or ""
    assert reason.startswith("Edge TPU probe failed (exit 1: OSError: ")
    assert library in reason and reason.endswith(": using the CPU model")
    with pytest.warns(BackendFallbackWarning):
        assert backend.load(tflite_pair).backend_name == "litert-cpu"


def test_edgetpu_real_delegate_on_this_machine_ends_on_cpu(tflite_pair: Path) -> None:
    backend = EdgeTpuBackend()
    with pytest.warns(BackendFallbackWarning):
        model = backend.load(tflite_pair)
    assert model.backend_name == "litert-cpu"
    reason = backend.probe() or ""
    assert reason.startswith("libedgetpu.so.1 (the Edge TPU runtime) is not installed: it is ")
    assert "libedgetpu1-std from Google's Coral apt repository, not a Debian package" in reason
    assert "libedgetpu.so.1" in fallbacks()[0].reason


def test_edgetpu_without_compiled_variant_ends_on_cpu(store: ModelStore, library: str) -> None:
    backend = EdgeTpuBackend(library=library, probe_command=_child("pass"))
    assert backend.probe() is None
    with pytest.warns(BackendFallbackWarning, match="no Edge TPU compiled variant"):
        model = backend.load(store.path("face_detector_short"))
    assert model.backend_name == "litert-cpu"
    assert "edgetpu_compiler" in fallbacks()[0].reason


def test_edgetpu_quantisation_round_trip() -> None:
    detail = {"dtype": np.uint8, "quantization": (1.0 / 127.5, 128)}
    values = np.array([-1.0, 0.0, 0.5, 1.0], np.float32)
    quantized = _quantize(values, detail)
    assert quantized.dtype == np.uint8
    np.testing.assert_allclose(_dequantize(quantized, detail), values, atol=1.0 / 127.5)


def test_a_first_invoke_that_segfaults_ends_on_the_cpu_model_once(
    tflite_pair: Path, tmp_path: Path, library: str
) -> None:
    runs = tmp_path / "runs"
    crash = _child(
        WITH_MODEL + f"invoke and open({str(runs)!r}, 'a').write('x'); "
        "invoke and __import__('ctypes').string_at(0)"
    )
    backend = EdgeTpuBackend(library=library, probe_command=crash)
    assert backend.probe() is None  # the delegate loads: only the first invoke crashes
    with pytest.warns(BackendFallbackWarning, match=r"crashed \(SIGSEGV\)"):
        model = backend.load(tflite_pair)
    assert model.backend_name == "litert-cpu" and model.path == tflite_pair
    [fallback] = fallbacks()
    assert fallback.reason == "Edge TPU probe crashed (SIGSEGV): using the CPU model"
    assert (fallback.wanted, fallback.used) == ("edgetpu", "litert-cpu")
    # this process is still here; a second backend (and load) asks the kept answer
    again = EdgeTpuBackend(library=library, probe_command=crash)
    assert again.load(tflite_pair).backend_name == "litert-cpu"
    assert runs.read_text() == "x", "the child ran once for this model file"


def test_a_first_invoke_that_hangs_is_killed_and_ends_on_the_cpu_model(
    tflite_pair: Path, tmp_path: Path, library: str
) -> None:
    pid_file = tmp_path / "pid"
    hang = _child(
        WITH_MODEL + f"invoke and open({str(pid_file)!r}, 'w').write(str(__import__('os')"
        ".getpid())); invoke and __import__('time').sleep(120)"
    )
    backend = EdgeTpuBackend(library=library, probe_command=hang, probe_timeout_s=1.0)
    started = time.monotonic()
    with pytest.warns(BackendFallbackWarning, match="timed out after 1 s"):
        model = backend.load(tflite_pair)
    assert time.monotonic() - started < 30
    assert model.backend_name == "litert-cpu"
    assert fallbacks()[0].reason == "Edge TPU probe timed out after 1 s: using the CPU model"
    pid = int(pid_file.read_text())
    assert not Path(f"/proc/{pid}").exists(), "the hung child was killed and reaped"


def test_the_real_probe_child_on_this_machine_says_why(tflite_pair: Path) -> None:
    variant = edgetpu_variant(tflite_pair)
    reason = first_invoke_fails(variant, "libedgetpu.so.1")
    assert reason is not None and reason.startswith("Edge TPU probe failed (exit 1: ")
    assert "libedgetpu.so.1" in reason and reason.endswith(": using the CPU model")


def test_a_first_invoke_that_works_lets_this_process_use_the_tpu(
    tflite_pair: Path, tmp_path: Path, library: str
) -> None:
    # Both children succeed; only then does this process load the delegate, for its own
    # interpreter (here it fails the way a TPU unplugged since would).
    runs = tmp_path / "runs"
    loads: list[bool] = []

    def loader(library: str) -> object:
        loads.append(runs.read_text() == "dx" if runs.exists() else False)
        raise ValueError(f"Failed to load delegate from {library}")

    ok = _child(WITH_MODEL + f"open({str(runs)!r}, 'a').write('x' if invoke else 'd')")
    backend = EdgeTpuBackend(delegate_loader=loader, library=library, probe_command=ok)
    with pytest.warns(BackendFallbackWarning, match="Edge TPU cannot load"):
        backend.load(tflite_pair)
    assert loads == [True], "the delegate child, the invoke child, then this process"
    assert first_invoke_fails(edgetpu_variant(tflite_pair), backend.library) is None  # kept
