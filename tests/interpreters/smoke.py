"""The smoke set one interpreter runs: import every module, swap a still, 60 demo frames, provision.

Run as ``python smoke.py WORKDIR`` by the venv's own interpreter (see
tests/test_interpreters.py); prints one line per step and exits non-zero on the
first failure, with the output of the step that failed.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

# What the extras the smoke venv does not install (`eval`, `convert`) bring.
OPTIONAL = {"onnx", "tflite", "tflite2onnx", "dlib", "face_recognition_models"}


def import_everything() -> int:
    count = 0
    for top in ("appliance", "web_ui", "provisioning"):
        package = importlib.import_module(top)
        for info in pkgutil.walk_packages(package.__path__, top + "."):
            try:
                importlib.import_module(info.name)
            except ModuleNotFoundError as exc:
                if (exc.name or "").split(".")[0] in OPTIONAL:
                    continue
                raise
            count += 1
    return count


def mirror(*args: str) -> None:
    cmd = [str(Path(sys.executable).with_name("mirror")), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        sys.exit(f"FAILED: {' '.join(args[:2])}\n{proc.stdout}\n{proc.stderr}")


def main() -> None:
    work = Path(sys.argv[1])
    print(f"python {sys.version.split()[0]}: imported {import_everything()} modules", flush=True)
    data = os.environ["MIRROR_DATA_DIR"]
    out = work / "swapped.png"
    mirror("swap-image", "--identity", "grace_hopper", "--input", f"{data}/models/astronaut.png",
           "--output", str(out))  # fmt: skip
    print(f"swap-image: {out.stat().st_size} bytes", flush=True)
    mirror("run", "--source", "demo", "--frames", "60", "--no-web", "--no-preview",
           "--status-every", "0")  # fmt: skip
    print("run: 60 demo frames", flush=True)
    bundle = work / "bundle"
    mirror("provision", "bundle", str(bundle), "--from", f"{data}/models")
    root = work / "root"
    mirror("provision", "--root", str(root), "--bundle", str(bundle), "--profile", "x86-cpu")
    unit = root / "etc/systemd/system/mirror.service"
    assert unit.is_file(), unit
    print(f"provision: {sum(1 for _ in root.rglob('*'))} paths under the root", flush=True)


if __name__ == "__main__":
    main()
