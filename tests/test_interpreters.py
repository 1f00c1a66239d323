"""The smoke set on every other CPython 3.10-3.13 on this machine.

The full suite runs on the default interpreter; each other CPython from 3.10 to
3.13 that is found (on PATH as ``python3.X``, or under pyenv) gets a venv with
the project's dependencies (``[cpu]``; cached under ``~/.cache/face-mirror/pythons``
and keyed by the dependency list, so only the first run downloads), the freshly
built wheel, and runs ``tests/interpreters/smoke.py`` in it. A version that is not
found is skipped with the places looked at.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.wheels import REPO, build_wheel

SMOKE = REPO / "tests" / "interpreters" / "smoke.py"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "face-mirror"
VERSIONS = ("3.10", "3.11", "3.12", "3.13")
OTHERS = [v for v in VERSIONS if v != f"{sys.version_info[0]}.{sys.version_info[1]}"]


def find_python(version: str) -> tuple[Path | None, list[str]]:
    """A ``python3.X`` that really is CPython ``version``, and where it looked."""
    candidates = [shutil.which(f"python{version}")]
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates += sorted(str(p) for p in pyenv.glob(f"{version}*/bin/python{version}"))
    candidates.append(f"/usr/bin/python{version}")
    looked = []
    for candidate in candidates:
        if not candidate or not Path(candidate).exists():
            continue
        looked.append(candidate)
        probe = subprocess.run(
            [candidate, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return Path(candidate), looked
    return None, looked


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


def dependency_venv(python: Path, version: str, wheel: Path) -> Path:
    """A cached venv holding the wheel's ``[cpu]`` dependencies (not the project itself)."""
    key = hashlib.sha256(wheel.name.encode() + (REPO / "pyproject.toml").read_bytes())
    env_dir = CACHE / "pythons" / f"{version}-{key.hexdigest()[:12]}"
    ready = env_dir / ".ready"
    env_dir.parent.mkdir(parents=True, exist_ok=True)
    # one builder at a time: a second test run at once would rebuild it under the first
    with open(env_dir.with_name(env_dir.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.exists():
            _build_venv(python, env_dir, wheel)
            ready.touch()
    return env_dir


def _build_venv(python: Path, env_dir: Path, wheel: Path) -> None:
    shutil.rmtree(env_dir, ignore_errors=True)
    subprocess.run([str(python), "-m", "venv", str(env_dir)], check=True, timeout=300)
    pip = [str(env_dir / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    steps = [[*pip, "install", "--upgrade", "pip"], [*pip, "install", f"{wheel}[cpu]"]]
    for step in steps:
        proc = subprocess.run(step, capture_output=True, text=True, timeout=1200, check=False)
        assert proc.returncode == 0, f"{' '.join(step)}:\n{proc.stderr[-3000:]}"


@pytest.mark.parametrize("version", OTHERS)
def test_smoke_set_on_other_pythons(version: str, wheel: Path, tmp_path: Path) -> None:
    python, looked = find_python(version)
    if python is None:
        pytest.skip(f"CPython {version} not found (looked at {looked or 'PATH, pyenv, /usr/bin'})")
    env_dir = dependency_venv(python, version, wheel)
    pip = [str(env_dir / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    install = [*pip, "install", "--no-deps", "--force-reinstall", str(wheel)]
    subprocess.run(install, check=True, capture_output=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run(
        [str(env_dir / "bin" / "python"), str(SMOKE), str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=900,
        check=False,
    )
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert f"python {version}" in proc.stdout
