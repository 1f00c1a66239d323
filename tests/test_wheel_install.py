"""The wheel a device gets, installed outside the checkout, runs `mirror`.

The wheel is built from this checkout, installed with ``--no-deps`` into a fresh
venv in a temporary folder, and run from another folder, so nothing of the source
tree can be found: the hardware profiles and the model manifest must come from
the wheel itself (``appliance.data.*``). Its dependencies are this test run's own
(already installed, so the test needs no network): a ``.pth`` file puts this
interpreter's site-packages after the venv's, and since a path listed in a
``.pth`` file has its own ``.pth`` files ignored, the checkout's editable finder
stays out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
import venv
from pathlib import Path

import cv2
import numpy as np
import pytest

from appliance.modelstore import ModelStore
from appliance.tools.bench_clips import tile3
from appliance.vision.face_pool import usable_cpus
from tests.wheels import PIP, REPO, build_wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with only the freshly built wheel of this project in it; returns its bin/."""
    base = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(base / "dist")
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(purelib) / "test-deps.pth").write_text("\n".join(sorted(ours)) + "\n")
    install = subprocess.run(
        [*PIP, "--python", str(python), "install", "--no-deps", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert install.returncode == 0, install.stderr
    return env_dir / "bin"


def run(
    bin_dir: Path, *args: str | Path, cwd: Path, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [str(bin_dir / args[0]), *map(str, args[1:])],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        check=False,
    )


def test_the_package_comes_from_the_venv_not_the_checkout(installed: Path, tmp_path: Path) -> None:
    code = (
        "import appliance, web_ui, provisioning, appliance.data.models as m, "
        "appliance.data.hardware_profiles as h; "
        "print(appliance.__file__); print(m.__file__); print(h.__file__)"
    )
    proc = run(installed, "python", "-c", code, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for line in proc.stdout.split():
        assert str(installed.parent) in line and not line.startswith(str(REPO)), line


def test_installed_doctor_finds_the_profiles(installed: Path, tmp_path: Path) -> None:
    proc = run(installed, "mirror", "doctor", "--json", cwd=tmp_path)
    assert "no hardware profiles" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    assert report["profile"]["name"], report


def test_installed_models_verify_reads_the_manifest(installed: Path, tmp_path: Path) -> None:
    proc = run(installed, "mirror", "models", "verify", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "manifest.yaml" not in proc.stderr


def test_installed_swap_image_swaps(installed: Path, tmp_path: Path, store: ModelStore) -> None:
    out = tmp_path / "swapped.png"
    visitor = store.path("astronaut")
    proc = run(
        installed, "mirror", "swap-image", "--identity", "grace_hopper",
        "--input", visitor, "--output", out, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    before = cv2.imread(str(visitor))
    after = cv2.imread(str(out))
    assert after is not None and after.shape == before.shape
    assert float(np.abs(after.astype(int) - before.astype(int)).mean()) > 1.0


@pytest.mark.skipif(usable_cpus() < 2, reason="swap helpers need two usable CPUs")
def test_installed_swap_video_swaps_a_crowd_in_helper_processes(
    installed: Path, tmp_path: Path, astronaut: np.ndarray
) -> None:
    """The helpers are fresh interpreters: they must find the package of the wheel."""
    clip = tmp_path / "crowd.mp4"
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter_fourcc(*"mp4v"), 30, (640, 480))
    for i in range(90):
        moved = [np.roll(astronaut, (2 * i * (c + 1), i * c), axis=(0, 1)) for c in range(3)]
        writer.write(tile3(moved, (640, 480)))
    writer.release()
    out = tmp_path / "swapped.mp4"
    proc = run(
        installed, "mirror", "-v", "swap-video", "--identity", "grace_hopper",
        "--input", clip, "--all-faces", "--output", out, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "90 frames, 90 with a swapped face" in proc.stdout + proc.stderr
    assert "swap helper process" in proc.stderr and " ready" in proc.stderr, proc.stderr
    assert "failed" not in proc.stderr, proc.stderr
