"""`mirror provision` into a temporary root, from a bundle built from the fetched models."""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
import subprocess
from pathlib import Path, PurePosixPath

import pytest

from appliance.cli.main import main
from appliance.modelstore import ModelStore
from provisioning.bundle_build import build_bundle
from provisioning.credentials import SECRET_MODE
from provisioning.install_lock import install_lock
from provisioning.layout import Layout
from web_ui.auth_store import AuthStore

PROFILE = "rpi4-cpu"
EXPECTED = {
    "etc/systemd/system/mirror.service": 0o644,
    "etc/default/mirror": 0o644,
    "etc/udev/rules.d/70-mirror.rules": 0o644,
    "usr/lib/sysusers.d/mirror.conf": 0o644,
    "var/lib/mirror/config.yaml": 0o600,
    "var/lib/mirror/web/web.yaml": 0o644,
    "var/lib/mirror/web/auth.json": 0o600,
    "var/lib/mirror/web/secret_key": 0o600,
    "var/lib/mirror/web/first-boot.txt": 0o600,
    "var/lib/mirror/models/face_detector.tflite": 0o644,
    "var/lib/mirror/models/face_landmarks_detector.tflite": 0o644,
}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory, store: ModelStore) -> Path:
    out = tmp_path_factory.mktemp("bundle")
    build_bundle(out, store.manifest, source=store.cache_dir, profile=PROFILE)
    return out


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A stand-in for the device's venv, so `systemd-analyze verify` finds ExecStart."""
    exe = tmp_path / "venv" / "bin" / "mirror"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return tmp_path / "venv"


def _provision(root: Path, bundle: Path, venv: Path, *extra: str) -> int:
    args = ["provision", "--bundle", str(bundle), "--root", str(root), "--venv", str(venv)]
    return main([*args, "--profile", PROFILE, *extra])


def _snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every path under root: its mode, mtime and (files) content hash."""
    out = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        out[str(path.relative_to(root))] = (info.st_mode, info.st_mtime_ns, digest)
    return out


def test_provision_writes_the_tree_and_a_second_run_changes_nothing(
    tmp_path: Path, bundle: Path, venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    assert _provision(root, bundle, venv) == 0
    first = capsys.readouterr().out
    for rel, mode in EXPECTED.items():
        path = root / rel
        assert path.is_file(), rel
        assert stat.S_IMODE(path.stat().st_mode) == mode, rel
    assert stat.S_IMODE((root / "var/lib/mirror/web").stat().st_mode) == 0o700

    password = first.split("admin password (shown once; change it at the first login): ")[1]
    password = password.strip()
    account = AuthStore(root / "var/lib/mirror/web/auth.json")
    assert account.verify("admin", password)
    assert account.account().must_change
    assert password in (root / "var/lib/mirror/web/first-boot.txt").read_text()
    assert len((root / "var/lib/mirror/web/secret_key").read_bytes()) >= 32
    assert stat.S_IMODE((root / "var/lib/mirror/web/auth.json").stat().st_mode) == SECRET_MODE

    unit = (root / "etc/systemd/system/mirror.service").read_text()
    for line in (
        "Type=notify",
        "WatchdogSec=10s",
        "Restart=on-failure",
        "User=mirror",
        "SupplementaryGroups=video gpio",
        "ProtectSystem=strict",
        "ReadWritePaths=/var/lib/mirror",
        "NoNewPrivileges=yes",
    ):
        assert line in unit.splitlines(), line
    assert f"--profile {PROFILE}" in unit
    rules = (root / "etc/udev/rules.d/70-mirror.rules").read_text()
    assert "1a6e" in rules and "9302" in rules and "video4linux" in rules
    # Debian's udev leaves /dev/gpiochip* to root: the service's gpio group gets them
    assert 'SUBSYSTEM=="gpio", KERNEL=="gpiochip*", GROUP="gpio", MODE="0660"' in rules
    assert "MIRROR_DATA_DIR=/var/lib/mirror" in (root / "etc/default/mirror").read_text()

    before = _snapshot(root)
    assert _provision(root, bundle, venv) == 0
    second = capsys.readouterr().out
    assert "no change" in second
    assert "admin password" not in second
    assert _snapshot(root) == before


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_unit_passes_systemd_analyze_verify(tmp_path: Path, bundle: Path, venv: Path) -> None:
    root = tmp_path / "root"
    assert _provision(root, bundle, venv) == 0
    unit = root / "etc/systemd/system/mirror.service"
    proc = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "mirror.service" not in proc.stderr, proc.stderr


def test_dry_run_writes_nothing(
    tmp_path: Path, bundle: Path, venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    assert _provision(root, bundle, venv, "--dry-run") == 0
    out = capsys.readouterr().out
    assert "create    file       /etc/systemd/system/mirror.service 0644" in out
    assert "nothing written" in out
    assert list(root.iterdir()) == []


def test_a_second_install_while_one_runs_is_refused_and_writes_nothing(
    tmp_path: Path, bundle: Path, venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    layout = Layout(root=root, venv=PurePosixPath(venv))
    with install_lock(layout):  # the first install, still running
        before = {p.relative_to(root) for p in root.rglob("*")}
        assert _provision(root, bundle, venv) == 1
        assert {p.relative_to(root) for p in root.rglob("*")} == before
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("mirror: error: another `mirror provision`")
    assert _provision(root, bundle, venv) == 0  # once it has ended


def test_corrupted_model_fails_naming_it_and_leaves_the_root_untouched(
    tmp_path: Path, bundle: Path, venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad-bundle"
    shutil.copytree(bundle, bad)
    model = bad / "models" / "face_landmarks_detector.tflite"
    data = bytearray(model.read_bytes())
    data[1000] ^= 0xFF
    model.write_bytes(bytes(data))
    root = tmp_path / "root"
    root.mkdir()
    assert _provision(root, bad, venv) == 1
    err = capsys.readouterr().err
    assert "face_landmarks_detector.tflite" in err
    assert "sha256" in err
    assert list(root.iterdir()) == []

    # Rewriting bundle.json to match does not help: the model manifest pins the hash.
    index = json.loads((bad / "bundle.json").read_text())
    rel = "models/face_landmarks_detector.tflite"
    index["files"][rel]["sha256"] = hashlib.sha256(bytes(data)).hexdigest()
    (bad / "bundle.json").write_text(json.dumps(index))
    assert _provision(root, bad, venv) == 1
    assert "model manifest pins" in capsys.readouterr().err
    assert list(root.iterdir()) == []


def test_tensorrt_profile_from_a_bundle_without_variants_says_the_tflite_model_runs(
    tmp_path: Path, bundle: Path, venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The device never converts (tests/test_onnx_bundle.py: the variants come in the bundle)."""
    root = tmp_path / "root"
    args = ["provision", "--bundle", str(bundle), "--root", str(root), "--venv", str(venv)]
    assert main([*args, "--profile", "jetson-orin-nano", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "deferred  convert" in out and "face_detector_short, face_detector_full" in out
    assert "tflite model on LiteRT" in out
    assert "engines" not in out  # nothing to build engines of
    assert not root.exists()


def test_bundle_index_lists_every_file_with_its_hash(bundle: Path, store: ModelStore) -> None:
    index = json.loads((bundle / "bundle.json").read_text())
    files = index["files"]
    for entry in store.manifest.entries().values():
        meta = files[f"models/{entry.file}"]
        assert meta["sha256"] == entry.sha256
    assert index["profile"] == PROFILE
    assert index["wheels"]["included"] is False
    assert any("pip download" in cmd for cmd in index["wheels"]["commands"])
