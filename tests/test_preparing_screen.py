"""The "preparing the accelerator" screen while TensorRT builds engines at the first start.

This machine has no GPU: the GPU's state (TensorRT's libraries loaded, a driver that sees
a device) is simulated by handing ``gpu_libs`` the state it reads, and the engine a build
leaves is a file where onnxruntime writes it. The models, the onnxruntime session and the
screen drawn in the label's font are real.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from appliance.inference import gpu_libs, trt_cache
from appliance.inference.engine_builds import engines_to_build
from appliance.inference.onnx_backend import OnnxBackend, trt_cache_dir
from appliance.inference.runtime_models import RoleChoice
from appliance.media.overlays import Overlays
from appliance.media.preparing_screen import PreparingScreen
from appliance.modelstore import ModelStore
from appliance.modelstore.hashing import sha256_file
from appliance.modelstore.onnx_variants import OnnxVariants
from appliance.tools.convert import convert_models
from tests.screen_fakes import Recorder
from tests.waiting import wait_for

GPU_PROVIDERS = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
TRT = "10.16.1"


@pytest.fixture
def gpu_here(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """TensorRT's libraries loaded and a GPU the driver sees, as on the device."""
    state = gpu_libs.GpuLibraries(True, "loaded", "tensorrt_libs", "", TRT)
    monkeypatch.setattr(gpu_libs, "prepare", lambda: state)
    monkeypatch.setattr(gpu_libs, "cuda_driver_problem", lambda: None)
    monkeypatch.setattr(trt_cache, "tensorrt_version", lambda: TRT)
    yield


@pytest.fixture(scope="module")
def detector(store: ModelStore, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("onnx")
    convert_models(store, out, names=["face_detector_short"])
    return OnnxVariants(store, out).path("face_detector_short")


def _role(backend: OnnxBackend, path: Path) -> RoleChoice:
    return RoleChoice("detector", "face_detector_short.onnx", "face_detector_short", path,
                      "tensorrt", "", path, backend)  # fmt: skip


def test_an_engine_is_pending_until_its_version_keyed_cache_holds_one(
    gpu_here: None, detector: Path, tmp_path: Path
) -> None:
    backend = OnnxBackend(cache_dir=tmp_path, available=lambda: GPU_PROVIDERS)
    role = _role(backend, detector)
    assert engines_to_build([role, role]) == [detector.name]  # said once
    folder = trt_cache_dir(sha256_file(detector), tmp_path)
    assert folder.name.endswith(f"-trt{TRT}-ort{trt_cache.onnxruntime_version()}")
    older = tmp_path / f"{folder.name.split('-')[0]}-trt10.9.0-ort1.20.0"
    older.mkdir(parents=True)
    (older / "TensorrtExecutionProvider_TRTKernel_graph_0_fp16_sm75.engine").write_bytes(b"x")
    assert engines_to_build([role]) == [detector.name]  # another TensorRT's engine is no use
    folder.mkdir(parents=True)
    (folder / "TensorrtExecutionProvider_TRTKernel_graph_0_fp16_sm75.engine").write_bytes(b"x")
    assert engines_to_build([role]) == []
    assert engines_to_build([_role(OnnxBackend(("cuda", "cpu")), detector)]) == []


def test_no_engine_is_pending_where_tensorrt_cannot_run(detector: Path, tmp_path: Path) -> None:
    gpu_libs.forget()
    backend = OnnxBackend(cache_dir=tmp_path, available=lambda: GPU_PROVIDERS)
    assert engines_to_build([_role(backend, detector)]) == []  # no libnvinfer, no driver here


def test_the_preparing_screen_shows_until_the_models_are_loaded(store: ModelStore) -> None:
    overlays = Overlays(store.path("label_font"))
    display = Recorder()
    with PreparingScreen(display, overlays, (640, 360)) as screen:
        assert display.started  # started early: the session's start finds it running
        assert wait_for(lambda: len(display.images) >= 2)
    shown = len(display.images)
    time.sleep(0.6)  # longer than the feed's period
    assert len(display.images) == shown  # nothing written once the block ended
    image = display.images[0]
    assert image.shape == (360, 640, 3)
    assert np.array_equal(image, overlays.preparing_screen((640, 360)))
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 10  # words drawn, not a blank
    assert not screen.feed.showing
