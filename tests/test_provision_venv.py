"""A real device venv, made offline: a bundle with the wheels for this machine (pip downloads
them from the package index once; pip's cache under ~/.cache/face-mirror-tests/ makes reruns
fast), then `mirror provision` into a temp root with this machine's Python as the root's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from appliance.cli.main import main
from appliance.modelstore import ModelStore
from provisioning.provision import Request, provision
from provisioning.venv_step import STAMP
from tests.wheels import index_reachable

PROFILE = "x86-cpu"  # extras [cpu], no system site packages
PIP_CACHE = Path.home() / ".cache" / "face-mirror-tests" / "pip"


@pytest.fixture(scope="module")
def wheel_bundle(tmp_path_factory: pytest.TempPathFactory, store: ModelStore) -> Path:
    if not index_reachable():
        pytest.skip("the package index (pypi.org) cannot be reached: no wheels to bundle")
    out = tmp_path_factory.mktemp("wheel-bundle")
    PIP_CACHE.mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PIP_CACHE_DIR", str(PIP_CACHE))
        args = ["provision", "bundle", str(out), "--from", str(store.cache_dir), "--with-wheels"]
        assert main([*args, "--profile", PROFILE]) == 0
    return out


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86-cpu profile")
def test_offline_venv_is_made_runs_and_a_second_run_changes_nothing(
    tmp_path: Path, wheel_bundle: Path
) -> None:
    index = json.loads((wheel_bundle / "bundle.json").read_text())
    assert index["wheels"]["included"] and index["target"]["extras"] == ["cpu"]
    names = {Path(rel).name for rel in index["files"] if rel.startswith("wheels/")}
    assert index["project"]["wheel"] in names
    assert any(name.startswith("onnxruntime-") for name in names)  # the cpu extra
    assert any(name.startswith("pip-") for name in names)

    root = tmp_path / "root"
    request = Request(
        root=root, bundle=wheel_bundle, profile=PROFILE, host_python=Path(sys.executable)
    )
    dry = provision(replace(request, dry_run=True), progress=False)
    venv_lines = [a.line() for a in dry.plan.actions if a.kind == "venv"]
    assert venv_lines and venv_lines[0].startswith("create    venv       /opt/mirror/venv")
    assert "face-mirror[cpu]==" in venv_lines[0]
    assert not root.exists()

    first = provision(request, progress=False)
    assert first.report is not None and any("venv" in line for line in first.report.changed)
    venv = root / "opt" / "mirror" / "venv"
    stamp = json.loads((venv / STAMP).read_text())
    assert stamp["extras"] == ["cpu"] and stamp["system_site_packages"] is False
    assert sorted(stamp["wheels"]) == sorted(names)

    # the installed command runs from outside the checkout, with nothing of this shell
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    clean = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    proc = subprocess.run(
        [str(venv / "bin" / "mirror"), "--help"],
        cwd=outside,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "provision" in proc.stdout
    where = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import appliance, onnxruntime; print(appliance.__file__)",
        ],
        cwd=outside,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert where.returncode == 0, where.stderr
    assert where.stdout.strip().startswith(str(venv)), where.stdout

    second = provision(request, progress=False)
    assert second.report is not None and second.report.changed == []
    unchanged = [a for a in second.plan.actions if a.kind in ("venv", "wheel")]
    assert unchanged and all(a.status == "unchanged" for a in unchanged)
