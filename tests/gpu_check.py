"""``python -m tests.gpu_check`` (``make test-gpu``): the mirror on a real NVIDIA GPU, in minutes.

Not part of ``make test``. On a machine without an NVIDIA GPU (no ``nvidia-smi`` that
lists one, nothing under ``/proc/driver/nvidia/gpus``) it says so and exits 0. With one:

1. a venv with the ``gpu`` extra (onnxruntime-gpu for CUDA 12 with NVIDIA's CUDA and
   cuDNN wheels), cached in ``~/.cache/face-mirror/gpu-venv`` (``pip install -e``, so it
   runs this checkout); the ONNX variants made by this checkout's own venv (``mirror
   models convert``: the conversion tools live where bundles are built);
2. the sessions: the detector loaded on TensorRT (then CUDA, CPU) and on CUDA (then CPU),
   with the providers each session really got and every fallback's reason;
3. ``mirror doctor --json --profile P`` (the providers each model's session got);
4. a short ``mirror bench --profile P`` on TensorRT and on CUDA (the demo camera, 1 face,
   640x480, 60 frames).

Everything lands in ``test-output/gpu/`` (``summary.txt`` first). It fails when the
CUDA session does not run on CUDA; TensorRT not running is reported with its reason
(its libraries are not on PyPI) and fails only with ``GPU_REQUIRE_TENSORRT=1``. The whole
run is held under ``GPU_BUDGET_S`` (480 s; each step gets what is left).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "test-output" / "gpu"
VENV = Path.home() / ".cache" / "face-mirror" / "gpu-venv"
BUDGET_S = float(os.environ.get("GPU_BUDGET_S", "480"))
PROFILE = "x86-nvidia-t4"
TENSORRT, CUDA = "TensorrtExecutionProvider", "CUDAExecutionProvider"
BENCH = ["--frames", "60", "--sizes", "640x480", "--faces", "1", "--repeat", "1"]
BACKENDS = ("tensorrt,onnx-cpu", "cuda,onnx-cpu")
DETECTOR = (
    "from appliance.modelstore import ModelStore\n"
    "from appliance.modelstore.onnx_variants import OnnxVariants\n"
    "print(OnnxVariants(ModelStore()).path('face_detector_short'))"
)
SESSIONS = """
import json, sys, warnings
from pathlib import Path
from appliance.inference.fallbacks import fallbacks
from appliance.inference.onnx_backend import OnnxBackend
from appliance.inference import gpu_libs
warnings.simplefilter("ignore")
path = Path(sys.argv[1])
out = {"libraries": str(gpu_libs.prepare()), "driver": gpu_libs.cuda_driver_problem()}
for name, chain in (("tensorrt", ("tensorrt", "cuda", "cpu")), ("cuda", ("cuda", "cpu"))):
    model = OnnxBackend(chain).load(path)
    out[name] = {"asked": list(model.asked), "providers": list(model.providers)}
out["fallbacks"] = [f.describe() for f in fallbacks()]
print(json.dumps(out))
"""

Which = Callable[[str], str | None]


def gpu_present(proc: Path = Path("/proc"), which: Which = shutil.which) -> tuple[bool, str]:
    """Whether an NVIDIA GPU is here, and what said so (or what was looked at)."""
    gpus = proc / "driver" / "nvidia" / "gpus"
    if gpus.is_dir() and any(gpus.iterdir()):
        return True, f"{gpus} lists {len(list(gpus.iterdir()))} GPU(s)"
    smi = which("nvidia-smi")
    if smi is not None:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, check=False)
        if listed.returncode == 0 and "GPU" in listed.stdout:
            return True, listed.stdout.strip().splitlines()[0]
        return False, f"nvidia-smi lists no GPU ({(listed.stderr or listed.stdout).strip()})"
    return False, f"no nvidia-smi on PATH and no {gpus}"


class Run:
    """Steps under one time budget, each logged with its wall time."""

    def __init__(self, budget_s: float) -> None:
        self.deadline = time.monotonic() + budget_s
        self.lines: list[str] = []

    def step(self, name: str, cmd: Sequence[str], log: Path, check: bool = True) -> str:
        left = self.deadline - time.monotonic()
        if left < 10:
            raise SystemExit(f"test-gpu: out of time before {name}")
        print(f"test-gpu: {name}", flush=True)
        start = time.monotonic()
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=left, check=False, cwd=REPO
            )
        except subprocess.TimeoutExpired:
            raise SystemExit(f"test-gpu: {name} ran out of the {BUDGET_S:.0f} s budget") from None
        wall = time.monotonic() - start
        log.write_text(f"$ {' '.join(cmd)}\n{done.stdout}\n{done.stderr}")
        self.lines.append(f"{name}: {wall:.1f} s (exit {done.returncode}; log {log.name})")
        if check and done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise SystemExit(f"test-gpu: {name} failed:\n" + "\n".join(tail))
        return done.stdout


def _venv(run: Run) -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        run.step("make the gpu venv", [sys.executable, "-m", "venv", str(VENV)], OUT / "venv.log")
    pip = [str(python), "-m", "pip", "--disable-pip-version-check", "-q", "install"]
    run.step("install .[gpu]", [*pip, "-e", f"{REPO}[gpu]"], OUT / "pip.log")
    return VENV / "bin"


def _bench(run: Run, mirror: Path, profile: str, backends: str) -> list[str]:
    json_out = OUT / f"bench-{backends.split(',', maxsplit=1)[0]}.json"
    demo = OUT / "no-media"  # no clips: the demo camera, the same on every machine
    demo.mkdir(exist_ok=True)
    cmd = [str(mirror), "bench", "--profile", profile, "--backends", backends, *BENCH]
    cmd += ["--media", str(demo)]
    run.step(f"bench on {backends}", [*cmd, "--json", str(json_out)], OUT / f"{json_out.stem}.log")
    data = json.loads(json_out.read_text())
    lines = [f"bench {backends}:", *(f"  {x}" for x in data["options"].get("runtime", []))]
    return lines + [
        f"  {r['variant']}: {r['output_fps']:.1f} fps, e2e p95 {r['e2e_ms']['p95']:.1f} ms"
        for r in data["results"]
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.gpu_check")
    parser.add_argument("--profile", default=PROFILE, help=f"hardware profile ({PROFILE})")
    args = parser.parse_args(argv)
    present, why = gpu_present()
    if not present:
        print(f"test-gpu: no NVIDIA GPU here ({why}): nothing to test", flush=True)
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    run = Run(BUDGET_S)
    run.lines.append(f"GPU: {why}")
    this_bin = Path(sys.executable).parent
    run.step("ONNX variants", [str(this_bin / "mirror"), "models", "convert"], OUT / "convert.log")
    bin_dir = _venv(run)
    detector = Path(
        run.step(
            "detector path",
            [str(bin_dir / "python"), "-c", DETECTOR],
            OUT / "detector.log",
        ).strip()
    )
    sessions = json.loads(
        run.step(
            "sessions", [str(bin_dir / "python"), "-c", SESSIONS, str(detector)], OUT / "s.log"
        )
    )
    (OUT / "sessions.json").write_text(json.dumps(sessions, indent=1) + "\n")
    doctor = [str(bin_dir / "mirror"), "doctor", "--json", "--profile", args.profile]
    (OUT / "doctor.json").write_text(run.step("doctor", doctor, OUT / "doctor.log", check=False))
    benches = [line for b in BACKENDS for line in _bench(run, bin_dir / "mirror", args.profile, b)]
    return _summary(run, sessions, benches)


def _summary(run: Run, sessions: dict[str, Any], bench_lines: list[str]) -> int:
    lines = [*run.lines, f"libraries: {sessions['libraries']}", f"driver: {sessions['driver']}"]
    failures = []
    for name, wanted in (("tensorrt", TENSORRT), ("cuda", CUDA)):
        got = sessions[name]["providers"]
        lines.append(f"session on {name}: {', '.join(got)}")
        required = name == "cuda" or os.environ.get("GPU_REQUIRE_TENSORRT") == "1"
        if got[0] != wanted and required:
            failures.append(f"the {name} session runs on {got[0]}, not {wanted}")
    lines += [f"fallback: {f}" for f in sessions["fallbacks"]]
    lines += bench_lines
    lines += [f"FAILED: {f}" for f in failures]
    (OUT / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    print(f"test-gpu: figures in {OUT}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
