"""``make test-gpu`` without a GPU, and the `mirror bench --profile/--backends` it runs.

Whether a GPU is there is read from ``/proc/driver/nvidia/gpus`` and ``nvidia-smi -L``: both
are simulated here (a faked /proc, an ``nvidia-smi`` that prints what a T4's prints).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from appliance.cli.main import main
from tests import gpu_check

REPO = Path(__file__).resolve().parent.parent
T4_LISTED = "GPU 0: Tesla T4 (UUID: GPU-6a3c0a9e-8f0b-2a4d-93c1-0b7e2f5d1c44)"


def _smi(folder: Path, out: str, status: int = 0) -> Path:
    tool = folder / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\necho '{out}'\nexit {status}\n")
    tool.chmod(0o755)
    return tool


def test_a_gpu_is_seen_in_proc_or_by_nvidia_smi(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    assert gpu_check.gpu_present(proc, lambda _name: None) == (
        False,
        f"no nvidia-smi on PATH and no {proc}/driver/nvidia/gpus",
    )
    smi = _smi(tmp_path, T4_LISTED)
    assert gpu_check.gpu_present(proc, lambda _name: str(smi)) == (True, T4_LISTED)
    failing = _smi(tmp_path, "NVIDIA-SMI has failed: no NVIDIA driver is running.", 9)
    present, why = gpu_check.gpu_present(proc, lambda _name: str(failing))
    assert not present and "no NVIDIA driver is running" in why
    (proc / "driver" / "nvidia" / "gpus" / "0000:00:04.0").mkdir(parents=True)
    assert gpu_check.gpu_present(proc, lambda _name: None)[0]


@pytest.mark.skipif(gpu_check.gpu_present()[0], reason="this machine has an NVIDIA GPU")
def test_without_a_gpu_the_check_says_so_and_passes(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{tmp_path}:/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.gpu_check"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("test-gpu: no NVIDIA GPU here (")
    assert done.stdout.rstrip().endswith("nothing to test")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--backends", "cuda"], "--backends goes with --profile NAME"),
        (["--profile", "x86-nvidia-t4", "--backends", "cuda,opencl"], "choose from tensorrt"),
        (["--profile", "no-such-board"], "unknown profile 'no-such-board'"),
    ],
)
def test_bench_refuses_a_bad_profile_or_backend_order(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--frames", "1", *args]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mirror: error: ") and says in err[0]


def test_bench_loads_the_models_as_the_profile_says_and_records_the_choice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures = tmp_path / "bench.json"
    args = ["bench", "--frames", "2", "--sizes", "320x240", "--faces", "1", "--repeat", "1"]
    args += ["--media", str(tmp_path), "--json", str(figures)]
    assert main([*args, "--profile", "x86-nvidia-t4", "--backends", "cuda,onnx-cpu"]) == 0
    options = json.loads(figures.read_text())["options"]
    assert options["profile"] == "x86-nvidia-t4" and options["backends"] == "cuda,onnx-cpu"
    runtime = options["runtime"]
    assert runtime[1].startswith("backend     onnx-cpu")  # no CUDA here, said why
    assert any(line.strip().startswith("skipped   cuda:") for line in runtime)
    assert "bench: backend     onnx-cpu" in capsys.readouterr().out
