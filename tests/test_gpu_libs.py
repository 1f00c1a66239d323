"""Finding CUDA, cuDNN and TensorRT for onnxruntime-gpu, the reasons when they are not there,
and the TensorRT cache keyed by version and pruned.

This machine has no GPU and no TensorRT: what is checked here is what it really lacks
(libcuda.so.1, libnvinfer.so.10) and, for TensorRT's library found in NVIDIA's
``tensorrt_libs`` package, a stand-in library compiled here that answers
``getInferLibVersion`` as TensorRT 10.16.1 does (in a child process, so that this one never
has a libnvinfer). onnxruntime's messages are the ones onnxruntime-gpu 1.23.2 raised on
this machine (tests/test_gpu_bundle.py makes them for real).
"""

from __future__ import annotations

import ctypes.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from appliance.inference import gpu_libs, trt_cache
from appliance.inference.onnx_backend import provider_error

REPO = Path(__file__).resolve().parent.parent
NO_DRIVER = ctypes.util.find_library("cuda") is None

# What onnxruntime-gpu 1.23.2 raised here (no NVIDIA driver), C++ signatures cut short.
CUDA_RAISED = (
    "/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_call.cc:129 std::conditional_t<THRW,"
    " void, onnxruntime::common::Status> onnxruntime::CudaCall(ERRTYPE, const char*, ...) "
    "[with ERRTYPE = cudaError; bool THRW = true] CUDA failure 35: CUDA driver version is "
    "insufficient for CUDA runtime version ; GPU=-1 ; hostname=vm ; file=/onnxruntime_src/"
    "onnxruntime/core/providers/cuda/cuda_execution_provider.cc ; line=282 ; "
    "expr=cudaSetDevice(info_.device_id); \n\n"
)
TRT_RAISED = (
    "/onnxruntime_src/onnxruntime/python/onnxruntime_pybind_state.cc:560 void onnxruntime::"
    "python::RegisterTensorRTPluginsAsCustomOps(PySessionOptions&, const onnxruntime::"
    "ProviderOptions&) Please install TensorRT libraries as mentioned in the GPU requirements "
    "page, make sure they're in the PATH or LD_LIBRARY_PATH, and that your GPU is supported.\n"
)
LOAD_FAILED = (
    "[ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so "
    "with error: libcublasLt.so.12: cannot open shared object file: No such file or directory"
)


def test_versions_read_from_tensorrt_are_decoded() -> None:
    assert gpu_libs.decode_version(101601) == "10.16.1"  # TensorRT 10: major * 10000
    assert gpu_libs.decode_version(100900) == "10.9.0"
    assert gpu_libs.decode_version(8601) == "8.6.1"  # TensorRT 8: major * 1000


@pytest.mark.skipif(not NO_DRIVER, reason="this machine has an NVIDIA driver")
def test_onnxruntime_errors_become_their_reason() -> None:
    cuda = provider_error(RuntimeError(CUDA_RAISED), "CUDAExecutionProvider")
    assert cuda == (
        "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version "
        "(no NVIDIA driver: libcuda.so.1 not found)"
    )
    loaded = provider_error(RuntimeError(LOAD_FAILED), "CUDAExecutionProvider")
    assert loaded == "libcublasLt.so.12: cannot open shared object file: No such file or directory"
    trt = provider_error(RuntimeError(TRT_RAISED), "TensorrtExecutionProvider")
    assert trt.startswith("TensorRT's libraries did not load")  # this onnxruntime has none


@pytest.mark.skipif(not NO_DRIVER, reason="this machine has an NVIDIA driver")
def test_without_a_driver_or_tensorrt_each_reason_names_the_missing_library() -> None:
    gpu_libs.forget()
    try:
        found = gpu_libs.prepare()
    finally:
        gpu_libs.forget()
    assert gpu_libs.cuda_driver_problem() == "no NVIDIA driver: libcuda.so.1 not found"
    assert found.tensorrt is None and found.tensorrt_version is None
    assert found.tensorrt_note.startswith("libnvinfer.so.10 not found")
    assert "tensorrt-cu12-libs" in found.tensorrt_note
    assert not found.cuda_ready and "no CUDA provider" in found.cuda_note  # the CPU build


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler for the stand-in library")
def test_tensorrt_from_nvidias_tensorrt_libs_package_is_found_with_its_version(
    tmp_path: Path,
) -> None:
    package = tmp_path / "site" / "tensorrt_libs"
    package.mkdir(parents=True)
    source = tmp_path / "nvinfer.c"
    source.write_text("int getInferLibVersion(void) { return 101601; }\n")
    library = package / "libnvinfer.so.10"
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-Wl,-soname,libnvinfer.so.10", "-o", str(library), source],
        check=True,
    )
    shutil.copy(library, package / "libnvonnxparser.so.10")
    # like NVIDIA's: importing the package loads the libraries beside it
    (package / "__init__.py").write_text(
        "import ctypes, glob, os\n"
        "for lib in sorted(glob.glob(os.path.join(os.path.dirname(__file__), 'lib*.so*'))):\n"
        "    ctypes.CDLL(lib)\n"
    )
    script = textwrap.dedent(
        """
        from appliance.inference import gpu_libs, trt_cache
        found = gpu_libs.prepare()
        print(found.tensorrt, found.tensorrt_version, trt_cache.version_key(ort="1.23.2"))
        """
    )
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{REPO}"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    where, version, key = done.stdout.split()
    assert where == str(package) and version == "10.16.1"
    assert key == "trt10.16.1-ort1.23.2"


def test_caches_of_other_versions_are_pruned_and_this_versions_kept(tmp_path: Path) -> None:
    key = trt_cache.version_key(trt="10.16.1", ort="1.23.2")
    mine = trt_cache.trt_cache_dir("a" * 64, tmp_path, key)
    other_model = trt_cache.trt_cache_dir("b" * 64, tmp_path, key)
    old_trt = trt_cache.trt_cache_dir("a" * 64, tmp_path, "trt10.9.0-ort1.23.2")
    old_ort = trt_cache.trt_cache_dir("b" * 64, tmp_path, "trt10.16.1-ort1.22.0")
    unversioned = tmp_path / f"{'c' * 16}-trtunknown"  # made before the key had onnxruntime
    foreign = tmp_path / "notes"
    for folder in (mine, other_model, old_trt, old_ort, unversioned, foreign):
        folder.mkdir(parents=True)
        (folder / "x.engine").write_bytes(b"engine")
    assert trt_cache.prune(tmp_path, key) == sorted([old_trt, old_ort, unversioned])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [mine.name, other_model.name, "notes"]
    )
    assert trt_cache.prune(tmp_path, key) == []  # once per process
    assert trt_cache.has_engine(mine) and not trt_cache.has_engine(tmp_path / "absent")


def test_nothing_is_pruned_while_the_tensorrt_version_is_unknown(tmp_path: Path) -> None:
    old = trt_cache.trt_cache_dir("a" * 64, tmp_path, "trt10.9.0-ort1.23.2")
    old.mkdir(parents=True)
    assert trt_cache.prune(tmp_path, trt_cache.version_key(trt="unknown", ort="1.23.2")) == []
    assert old.is_dir()
