"""The runtime choice: profile, backend, model file per role, rate, and why; used by the mirror.

Devices are faked roots (``tests.test_hardware``); backends are chosen by the
real ``choose_backend`` on this CPU machine (no TensorRT, CUDA or Edge TPU:
each is skipped with its reason), except where a test needs a TPU that
answers. ONNX variants are converted into a temporary folder; the
installer-provided models are the tiny generated ones of ``test_neural_swap``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from appliance.cli.main import main
from appliance.config import Settings, settings_from_dict, updated
from appliance.device.catalog import load_profiles
from appliance.device.profile import HardwareProfile
from appliance.doctor.doctor import DoctorProbes, run_doctor
from appliance.inference.edgetpu import EdgeTpuBackend
from appliance.inference.fallbacks import clear_fallbacks, fallbacks
from appliance.inference.onnx_backend import OnnxBackend, available_providers
from appliance.inference.runtime import (
    RuntimeChoice,
    choose_for_device,
    config_target_fps,
    with_target_fps,
)
from appliance.inference.select import FALLBACK_SUBJECT, Attempt
from appliance.modelstore import Manifest, ModelStore
from appliance.modelstore.hashing import sha256_file
from appliance.modelstore.onnx_variants import OnnxVariants
from appliance.pipeline.factory import build_analyzer, build_processor
from appliance.tools.convert import convert_models
from appliance.vision.neural import provision_neural
from tests.test_hardware import DEVICES, fake_probe
from tests.test_neural_swap import make_embedder, make_swapper

MIRROR = [sys.executable, "-m", "appliance.cli.main"]
# Every fallback here is asserted through the choice and ``fallbacks()``, not the warning.
pytestmark = pytest.mark.filterwarnings("ignore::appliance.errors.BackendFallbackWarning")
GPU_PROVIDERS = {"TensorrtExecutionProvider", "CUDAExecutionProvider"}
PROVIDED_FILES = ("w600k_r50.onnx", "inswapper_128.onnx")


@pytest.fixture(autouse=True)
def _fresh_fallbacks() -> Iterator[None]:
    clear_fallbacks()
    yield
    clear_fallbacks()


@pytest.fixture(scope="module")
def profiles() -> dict[str, HardwareProfile]:
    return load_profiles()


@pytest.fixture(scope="module")
def converted(store: ModelStore, tmp_path_factory: pytest.TempPathFactory) -> OnnxVariants:
    out = tmp_path_factory.mktemp("onnx")
    convert_models(store, out, names=["face_detector_short", "face_detector_full"])
    return OnnxVariants(store, out)


@pytest.fixture
def no_gpu_providers() -> None:
    if GPU_PROVIDERS & set(available_providers()):
        pytest.skip(
            "this onnxruntime has TensorRT or CUDA: the fallbacks tested here cannot happen"
        )


def choose(
    device: str,
    root: Path,
    store: ModelStore,
    profiles: dict[str, HardwareProfile],
    variants: OnnxVariants | None = None,
    **kw: Any,
) -> RuntimeChoice:
    DEVICES[device](root)
    variants = variants or OnnxVariants(store, root / "no-onnx-variants")
    return choose_for_device(
        store, root=root, profiles=profiles, prober=fake_probe, variants=variants, **kw
    )


def roles(choice: RuntimeChoice) -> dict[str, tuple[str | None, str]]:
    return {r.role: (r.file.name if r.file else None, r.backend) for r in choice.roles}


def test_x86_cpu_runs_everything_on_litert(
    store: ModelStore, profiles: dict[str, HardwareProfile], tmp_path: Path
) -> None:
    choice = choose("x86-cpu", tmp_path, store, profiles)
    assert (choice.profile, choice.backend, choice.target_fps) == ("x86-cpu", "litert-cpu", 30)
    assert "nothing recognisable found" in choice.why
    assert choice.attempts == (Attempt("litert-cpu", True, "LiteRT on the CPU"),)
    assert roles(choice) == {
        "detector": ("face_detector.tflite", "litert-cpu"),
        "confirm": ("face_detection_full_range.tflite", "litert-cpu"),
        "landmarks": ("face_landmarks_detector.tflite", "litert-cpu"),
        "blendshapes": ("face_blendshapes.tflite", "litert-cpu"),
        "swapper": (None, "builtin"),
    }
    assert choice.role("detector").file == store.file_path("face_detector_short")
    assert choice.fallbacks == () and choice.onnx_backend() is None
    lines = choice.describe()
    assert lines[0].startswith("profile     x86-cpu: nothing recognisable found")
    assert lines[1] == "backend     litert-cpu: LiteRT on the CPU"
    assert lines[-1] == "target      30 fps, the profile's"


def test_rpi4_coral_without_a_tpu_runs_the_cpu_tflite_and_says_why(
    store: ModelStore, profiles: dict[str, HardwareProfile], tmp_path: Path
) -> None:
    if EdgeTpuBackend().probe() is None:
        pytest.skip("an Edge TPU answers on this machine")
    choice = choose("rpi4-coral-usb", tmp_path, store, profiles)
    assert (choice.profile, choice.backend, choice.target_fps) == (
        "rpi4-coral-usb",
        "litert-cpu",
        10,
    )
    assert "a Coral USB accelerator (18d1:9302)" in choice.why
    edgetpu, litert = choice.attempts
    assert edgetpu.name == "edgetpu" and not edgetpu.ok and "Edge TPU" in edgetpu.reason
    assert litert == Attempt("litert-cpu", True, "LiteRT on the CPU")
    detector = choice.role("detector")
    assert (detector.model, detector.file, detector.backend) == (
        "face_detector_short_edgetpu",
        store.file_path("face_detector_short"),
        "litert-cpu",
    )
    assert detector.reason == "the Edge TPU (edgetpu) was skipped, so the tflite model on LiteRT"
    assert [(f.subject, f.wanted, f.used) for f in choice.fallbacks] == [
        (FALLBACK_SUBJECT, "edgetpu", "litert-cpu")
    ]
    assert f"  skipped   edgetpu: {edgetpu.reason}" in choice.describe()


def test_rpi4_coral_with_a_tpu_runs_the_compiled_variant_when_present(
    store: ModelStore, profiles: dict[str, HardwareProfile], tmp_path: Path
) -> None:
    cache = linked_cache(store, tmp_path / "models")
    (cache / "face_detector_edgetpu.tflite").write_bytes(b"compiled by edgetpu_compiler")
    copy = ModelStore(cache_dir=cache, manifest=store.manifest)
    tpu = EdgeTpuBackend(delegate_loader=lambda library: object())

    def answering(order: Sequence[str]) -> tuple[Any, list[Attempt]]:
        return tpu, [Attempt("edgetpu", True, "Edge TPU delegate loaded")]

    choice = choose("rpi4-coral-usb", tmp_path / "root", copy, profiles, chooser=answering)
    detector, confirm = choice.role("detector"), choice.role("confirm")
    assert (detector.file, detector.backend) == (cache / "face_detector_edgetpu.tflite", "edgetpu")
    assert detector.source == cache / "face_detector.tflite"  # EdgeTpuBackend picks the variant
    assert (confirm.file, confirm.backend) == (
        cache / "face_detection_full_range.tflite",
        "litert-cpu",
    )
    [fallback] = choice.fallbacks
    assert (
        fallback.subject == "confirm model"
        and fallback.wanted == "face_detector_full_edgetpu on edgetpu"
    )
    assert "no Edge TPU compiled variant" in fallback.reason
    assert choice.role("landmarks").backend == "litert-cpu"


@pytest.mark.usefixtures("no_gpu_providers")
def test_t4_without_cuda_runs_onnx_on_the_cpu_with_converted_variants(
    store: ModelStore,
    profiles: dict[str, HardwareProfile],
    converted: OnnxVariants,
    tmp_path: Path,
) -> None:
    choice = choose("x86-nvidia-t4", tmp_path, store, profiles, converted)
    assert (choice.profile, choice.backend, choice.target_fps) == ("x86-nvidia-t4", "onnx-cpu", 30)
    assert [(a.name, a.ok) for a in choice.attempts] == [
        ("tensorrt", False),
        ("cuda", False),
        ("onnx-cpu", True),
    ]
    assert all("not in this onnxruntime build" in a.reason for a in choice.attempts[:2])
    assert roles(choice)["detector"] == ("face_detector_short.onnx", "onnx-cpu")
    assert choice.role("detector").file == converted.path("face_detector_short")
    assert choice.role("confirm").file == converted.path("face_detector_full")
    landmarks = choice.role("landmarks")
    assert (landmarks.file, landmarks.backend) == (store.file_path("face_landmarks"), "litert-cpu")
    assert "cannot be converted to ONNX" in landmarks.reason
    assert [f.wanted for f in choice.fallbacks] == ["tensorrt", "cuda"]
    assert choice.onnx_backend() is choice.engine


@pytest.mark.usefixtures("no_gpu_providers")
def test_t4_without_variants_falls_back_to_litert_once_with_the_reason(
    store: ModelStore,
    profiles: dict[str, HardwareProfile],
    tmp_path: Path,
) -> None:
    choice = choose("x86-nvidia-t4", tmp_path, store, profiles)
    detector = choice.role("detector")
    assert (detector.file, detector.backend) == (
        store.file_path("face_detector_short"),
        "litert-cpu",
    )
    assert detector.reason.startswith(
        "no usable ONNX variant: face_detector_short: no ONNX variant"
    )
    model_fallbacks = [f for f in fallbacks() if f.subject.endswith(" model")]
    assert [(f.subject, f.wanted, f.used) for f in model_fallbacks] == [
        (
            "detector model",
            "face_detector_short.onnx on onnx-cpu",
            "face_detector.tflite on litert-cpu",
        ),
        (
            "confirm model",
            "face_detector_full.onnx on onnx-cpu",
            "face_detection_full_range.tflite on litert-cpu",
        ),
    ]
    assert "run `mirror models convert`" in model_fallbacks[0].reason
    assert set(model_fallbacks) <= set(choice.fallbacks)


@pytest.mark.usefixtures("no_gpu_providers")
def test_analyzer_on_an_onnx_choice_finds_the_astronaut_with_landmarks(
    store: ModelStore,
    profiles: dict[str, HardwareProfile],
    converted: OnnxVariants,
    astronaut: np.ndarray,
    tmp_path: Path,
) -> None:
    choice = choose("x86-nvidia-t4", tmp_path, store, profiles, converted)
    analyzer = build_analyzer(Settings(), store, runtime=choice)
    assert analyzer.detector.model.backend_name == "onnx-cpu"
    assert analyzer.verifier is not None
    assert analyzer.verifier.detector.model.backend_name == "onnx-cpu"
    assert analyzer.landmarks.model.backend_name == "litert-cpu"
    assert analyzer.landmarks_on(1).model.backend_name == "litert-cpu"
    [face] = analyzer.analyze(astronaut)
    [expected] = build_analyzer(Settings(), store).analyze(astronaut)
    assert face.points.shape == (478, 3) and face.presence > 0.9
    np.testing.assert_allclose(face.xy, expected.xy, atol=0.5)


def test_profile_rate_unless_the_config_file_sets_one(
    store: ModelStore, profiles: dict[str, HardwareProfile], tmp_path: Path
) -> None:
    choice = choose("x86-cpu", tmp_path, store, profiles)
    assert with_target_fps(Settings(), choice).pipeline.target_fps == 30
    assert config_target_fps(Settings()) is None
    pinned = settings_from_dict({"pipeline": {"target_fps": 24}})
    assert config_target_fps(pinned) == 24
    assert with_target_fps(pinned, choice).pipeline.target_fps == 24
    assert choice.describe(24)[-1] == (
        "target      24 fps from the config file (pipeline.target_fps); the profile's is 30"
    )


def test_doctor_reports_the_choice_run_makes(
    store: ModelStore, profiles: dict[str, HardwareProfile], tmp_path: Path
) -> None:
    choice = choose("x86-nvidia-t4", tmp_path, store, profiles, OnnxVariants(store))
    report = run_doctor(
        tmp_path, profiles, store, probes=DoctorProbes(prober=fake_probe, live=False)
    )
    assert report.profile.name == choice.profile
    assert report.backends.chosen == choice.backend
    assert [(a.name, a.ok, a.reason) for a in report.backends.attempts] == [
        (a.name, a.ok, a.reason) for a in choice.attempts
    ]
    assert report.backends.fallbacks[: len(choice.fallbacks)] == [
        f.describe() for f in choice.fallbacks
    ]
    details = {r.role: r.detail for r in report.models.roles}
    for role in ("detector", "landmarks"):
        assert details[role].endswith(f"; runs {choice.role(role).summary()}")


def test_a_tensorrt_choice_is_named_as_the_profile_names_it(
    store: ModelStore,
    profiles: dict[str, HardwareProfile],
    converted: OnnxVariants,
    tmp_path: Path,
) -> None:
    engine = OnnxBackend(("tensorrt", "cuda", "cpu"), cache_dir=tmp_path / "trt")

    def tensorrt(order: Sequence[str]) -> tuple[Any, list[Attempt]]:
        return engine, [Attempt("tensorrt", True, "TensorrtExecutionProvider with libnvinfer")]

    choice = choose(
        "x86-nvidia-t4", tmp_path / "root", store, profiles, converted, chooser=tensorrt
    )
    assert engine.name == "onnx-tensorrt" and choice.backend == "tensorrt"
    assert choice.role("detector").backend == "tensorrt" and choice.onnx_backend() is engine


# --- the commands ---------------------------------------------------------------------------


def test_mirror_run_prints_the_choice_and_uses_the_profile_rate(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*MIRROR, "run", "--profile", "x86-cpu", "--frames", "5", "--no-preview", "--no-web"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    block = [line for line in proc.stderr.splitlines() if line.startswith("mirror: ")]
    assert block[0].startswith("mirror: profile     x86-cpu (--profile): chosen with --profile")
    assert block[1] == "mirror: backend     litert-cpu: LiteRT on the CPU"
    assert "mirror: detector    face_detector.tflite on litert-cpu" in block
    assert "mirror: target      30 fps, the profile's" in block
    assert block[-1] == "mirror: liveness off: the source is not a live camera"  # the demo
    assert "5 frames captured" in proc.stdout


@pytest.mark.usefixtures("no_gpu_providers")
def test_mirror_run_logs_each_fallback_once_and_keeps_the_config_rate(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("pipeline:\n  target_fps: 12\n", encoding="utf-8")
    args = ["--profile", "x86-nvidia-t4", "--frames", "5", "--no-preview", "--no-web"]
    args += ["--config", str(config)]
    proc = subprocess.run(
        [*MIRROR, "run", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("backend fallback: inference backend: tensorrt -> onnx-cpu") == 1
    assert proc.stderr.count("backend fallback: inference backend: cuda -> onnx-cpu") == 1
    assert "BackendFallbackWarning" not in proc.stderr
    assert "mirror: backend     onnx-cpu: onnxruntime CPUExecutionProvider" in proc.stderr
    assert "cannot be converted to ONNX" in proc.stderr
    assert "target      12 fps from the config file" in proc.stderr


def linked_cache(store: ModelStore, cache: Path) -> Path:
    """A cache holding the real manifest files as links."""
    cache.mkdir(parents=True)
    for entry in store.manifest.entries().values():
        (cache / entry.file).symlink_to(store.cache_dir / entry.file)
    return cache


def tiny_bundle(store: ModelStore, directory: Path) -> tuple[Path, Manifest]:
    """A bundle with a tiny embedder and inswapper, and a manifest pinning their hashes."""
    directory.mkdir()
    make_embedder(directory / "w600k_r50.onnx")
    make_swapper(directory / "inswapper_128.onnx", 128)
    provided = dict(store.manifest.provided)
    for name in ("arcface_w600k_r50", "inswapper_128"):
        sha = sha256_file(directory / provided[name].file)
        provided[name] = provided[name].model_copy(update={"sha256": sha})
    return directory, store.manifest.model_copy(update={"provided": provided})


@pytest.fixture
def installer(
    store: ModelStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path]:
    """A data dir with the real models, a manifest pinning the tiny models, and their bundle."""
    bundle, manifest = tiny_bundle(store, tmp_path / "bundle")
    data = tmp_path / "data"
    linked_cache(store, data / "models")
    manifest_file = tmp_path / "manifest.yaml"
    manifest_file.write_text(yaml.safe_dump(manifest.model_dump(mode="json")), encoding="utf-8")
    monkeypatch.setenv("MIRROR_DATA_DIR", str(data))
    monkeypatch.setenv("MIRROR_MODELS_MANIFEST", str(manifest_file))
    return bundle, data / "models"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_fetch_from_a_bundle_installs_the_provided_models(
    installer: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle, cache = installer
    code, out, err = cli(capsys, "models", "fetch", "--from", str(bundle))
    assert code == 0, err
    assert "0 package(s) downloaded" in out
    assert "provided: 2 installed, 0 already present, 4 not in the bundle, 0 refused" in out
    assert "inswapper_128/emap: inswapper_128.emap.npy written" in err
    assert (cache / "inswapper_128.emap.npy").is_file()
    code, out, _ = cli(capsys, "models", "fetch", "--from", str(bundle))
    assert code == 0 and "provided: 0 installed, 2 already present" in out


def test_verify_and_list_show_every_provided_file(
    installer: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle, cache = installer
    code, out, _ = cli(capsys, "models", "verify")
    assert code == 0
    assert f"  not provided inswapper_128/model          {cache / 'inswapper_128.onnx'}" in out
    assert "  not provided simswap_256/converter" in out
    assert "no sha256 is pinned in the manifest: a bundle's file would be refused" in out
    assert cli(capsys, "models", "fetch", "--from", str(bundle))[0] == 0
    code, out, _ = cli(capsys, "models", "verify")
    assert code == 0 and "  installed    inswapper_128/model " in out
    code, out, _ = cli(capsys, "models", "list")
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert "installer bundle, installed; commercial use: no" in lines["inswapper_128"]
    assert "not provided (unpinned), converter not provided (unpinned)" in lines["simswap_256"]
    (cache / "inswapper_128.onnx").write_bytes(b"damaged")
    code, out, err = cli(capsys, "models", "verify")
    assert code == 1
    assert "  bad hash     inswapper_128/model" in out and "moved to" in out
    assert err.count("\n") == 1 and "1 installer-provided file(s) corrupt" in err


def test_an_unpinned_file_in_the_bundle_is_refused_and_the_rest_installed(
    installer: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle, cache = installer
    make_swapper(bundle / "simswap_256.onnx", 256)
    code, out, err = cli(capsys, "models", "fetch", "--from", str(bundle))
    assert code == 1
    assert "2 installed" in out and "1 refused" in out
    [line] = [ln for ln in err.splitlines() if ln.startswith("mirror: error:")]
    assert "simswap_256/model" in line and "pins no sha256" in line
    assert (cache / "inswapper_128.onnx").is_file() and not (cache / "simswap_256.onnx").exists()


@pytest.mark.usefixtures("no_gpu_providers")
def test_processor_runs_a_provided_swapper_on_the_chosen_onnx_backend(
    store: ModelStore,
    profiles: dict[str, HardwareProfile],
    converted: OnnxVariants,
    tmp_path: Path,
) -> None:
    bundle, manifest = tiny_bundle(store, tmp_path / "bundle")
    copy = ModelStore(cache_dir=linked_cache(store, tmp_path / "models"), manifest=manifest)
    provision_neural(copy, bundle)
    choice = choose("x86-nvidia-t4", tmp_path / "root", copy, profiles, converted)
    settings = updated(Settings(), {"swap": {"swapper": "inswapper_128"}})
    processor = build_processor(settings, copy, "grace_hopper", runtime=choice)
    assert getattr(processor.swapper, "active", None) == "inswapper_128 on onnx-cpu"
    assert processor.analyzer.detector.model.backend_name == "onnx-cpu"
