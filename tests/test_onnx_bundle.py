"""ONNX variants are made where the bundle is built and installed from it; never on the device.

A bundle for a profile with ``.onnx`` roles carries the variants (and their record), each
with its sha256 in ``bundle.json``; ``mirror provision`` copies them into the model cache and
the runtime runs them. A bundle without them (or a device without the conversion tools,
which no device profile installs) is a warning and the tflite model on LiteRT, never a
traceback. The conversion tools are made absent the way a device lacks them: unimportable.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from appliance.cli.main import main
from appliance.device.catalog import load_profiles
from appliance.device.match import match_profile
from appliance.device.probe import probe
from appliance.inference.fallbacks import clear_fallbacks, fallbacks
from appliance.inference.runtime import choose_runtime
from appliance.modelstore import ModelStore
from appliance.modelstore.hashing import sha256_file
from provisioning.bundle_build import build_bundle

GPU_PROFILE = "x86-nvidia-t4"  # detector: face_detector_short.onnx (and its full-range confirm)
CPU_PROFILE = "rpi4-cpu"  # tflite only
VARIANTS = ("onnx/face_detector_short.onnx", "onnx/face_detector_full.onnx", "onnx/variants.json")
MODELS = Path("var/lib/mirror/models")


@pytest.fixture(scope="module")
def gpu_bundle(tmp_path_factory: pytest.TempPathFactory, store: ModelStore) -> Path:
    out = tmp_path_factory.mktemp("gpu-bundle")
    build_bundle(out, store.manifest, source=store.cache_dir, profile=GPU_PROFILE)
    return out


@pytest.fixture(scope="module")
def cpu_bundle(tmp_path_factory: pytest.TempPathFactory, store: ModelStore) -> Path:
    out = tmp_path_factory.mktemp("cpu-bundle")
    build_bundle(out, store.manifest, source=store.cache_dir, profile=CPU_PROFILE)
    return out


@pytest.fixture
def no_convert_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a device: tflite2onnx and onnx cannot be imported."""
    for module in ("onnx", "tflite2onnx"):
        monkeypatch.setitem(sys.modules, module, None)


def _provision(root: Path, bundle: Path, *extra: str) -> int:
    venv = root.parent / "venv"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    args = ["provision", "--bundle", str(bundle), "--root", str(root), "--venv", str(venv)]
    return main([*args, "--profile", GPU_PROFILE, *extra])


def test_the_bundle_holds_the_profiles_onnx_variants_with_their_hashes(gpu_bundle: Path) -> None:
    files = json.loads((gpu_bundle / "bundle.json").read_text())["files"]
    for rel in VARIANTS:
        assert files[rel]["sha256"] == sha256_file(gpu_bundle / rel), rel
    record = json.loads((gpu_bundle / "onnx/variants.json").read_text())
    assert sorted(record["variants"]) == ["face_detector_full", "face_detector_short"]
    assert not [rel for rel in files if "landmark" in rel and rel.startswith("onnx/")]


def test_a_bundle_for_a_tflite_profile_has_no_onnx_folder(cpu_bundle: Path) -> None:
    files = json.loads((cpu_bundle / "bundle.json").read_text())["files"]
    assert not [rel for rel in files if rel.startswith("onnx/")]
    assert not (cpu_bundle / "onnx").exists()


def test_the_device_installs_the_variants_and_runs_them_without_conversion_tools(
    tmp_path: Path,
    gpu_bundle: Path,
    no_convert_tools: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = tmp_path / "root"
    assert _provision(root, gpu_bundle, "--dry-run") == 0
    planned = capsys.readouterr().out
    assert f"create    model      /{MODELS}/onnx/face_detector_short.onnx" in planned
    assert "deferred  engines" in planned and "first start" in planned

    assert _provision(root, gpu_bundle) == 0
    capsys.readouterr()
    for rel in VARIANTS:
        name = rel.removeprefix("onnx/")
        assert sha256_file(root / MODELS / "onnx" / name) == sha256_file(gpu_bundle / rel)

    clear_fallbacks()
    store = ModelStore(cache_dir=root / MODELS)
    match = match_profile(load_profiles(), probe(tmp_path / "no-device"), GPU_PROFILE)
    choice = choose_runtime(match, store)
    for role, name in (("detector", "face_detector_short"), ("confirm", "face_detector_full")):
        running = choice.role(role)
        assert running.file == root / MODELS / "onnx" / f"{name}.onnx"
        assert running.backend == "onnx-cpu"  # no GPU here: the variant on onnxruntime's CPU
    assert _provision(root, gpu_bundle) == 0
    assert "no change" in capsys.readouterr().out


def test_a_bundle_without_variants_is_a_warning_and_the_tflite_model_runs(
    tmp_path: Path,
    cpu_bundle: Path,
    no_convert_tools: None,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    root = tmp_path / "root"
    assert _provision(root, cpu_bundle) == 0  # today's code: ModuleNotFoundError, a traceback
    out = capsys.readouterr()
    note = "no usable ONNX variant of face_detector_short, face_detector_full"
    assert note in out.out and "tflite model on LiteRT" in out.out
    assert any(note in r.message and r.levelname == "WARNING" for r in caplog.records)
    assert "Traceback" not in out.err
    assert not (root / MODELS / "onnx").exists()
    assert (root / "etc/systemd/system/mirror.service").is_file()  # the rest is in place

    clear_fallbacks()
    match = match_profile(load_profiles(), probe(tmp_path / "no-device"), GPU_PROFILE)
    choice = choose_runtime(match, ModelStore(cache_dir=root / MODELS))
    detector = choice.role("detector")
    assert detector.file == root / MODELS / "face_detector.tflite"
    assert detector.backend == "litert-cpu"
    assert any(f.subject == "detector model" for f in fallbacks())


def test_a_bundle_for_an_onnx_profile_needs_the_conversion_tools_where_it_is_built(
    tmp_path: Path,
    store: ModelStore,
    no_convert_tools: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "bundle"
    args = ["provision", "bundle", str(out), "--from", str(store.cache_dir)]
    assert main([*args, "--profile", GPU_PROFILE]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("mirror: error: the profile runs face_detector_short, ")
    assert "pip install 'face-mirror[convert]'" in err[-1]
    assert "Traceback" not in "\n".join(err)


def test_doctor_json_reports_the_providers_each_onnx_session_got(
    tmp_path: Path,
    gpu_bundle: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = tmp_path / "root"
    assert _provision(root, gpu_bundle) == 0
    capsys.readouterr()
    monkeypatch.setenv("MIRROR_DATA_DIR", str(root / "var/lib/mirror"))
    main(["doctor", "--json", "--profile", GPU_PROFILE])
    report = json.loads(capsys.readouterr().out)
    sessions = {s["role"]: s for s in report["backends"]["sessions"]}
    assert sorted(sessions) == ["confirm", "detector"]  # the tflite roles have no session
    detector = sessions["detector"]
    assert detector["file"] == str(root / MODELS / "onnx/face_detector_short.onnx")
    assert detector["asked"] == detector["providers"] == ["CPUExecutionProvider"]
    assert detector["error"] is None
    main(["doctor", "--profile", GPU_PROFILE])
    text = capsys.readouterr().out
    assert "session  detector: face_detector_short.onnx on CPUExecutionProvider" in text
