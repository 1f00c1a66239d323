"""``mirror doctor``: the real command on this machine and on faked device roots.

The JSON output is validated against its schema (``DoctorReport``); the models
are the real verified model cache; backends are chosen by the real
``choose_backend`` except where a test needs a backend outcome this machine
cannot give (a Coral that answers, no backend at all).
"""

from __future__ import annotations

import json
import platform
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from appliance.cli.main import main
from appliance.device.catalog import load_profiles
from appliance.device.probe import probe
from appliance.device.report import AttemptReport, DoctorReport, doctor_json_schema
from appliance.doctor.backend_check import Chooser
from appliance.doctor.doctor import DoctorProbes, run_doctor
from appliance.doctor.text import render_text
from appliance.errors import BackendError
from appliance.modelstore import ModelStore
from tests.test_hardware import FakeDevice, fake_probe, rpi4_coral


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["doctor", *args])
    out, err = capsys.readouterr()
    return code, out, err


def doctor_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, DoctorReport, str]:
    code, out, err = doctor(capsys, "--json", *args)
    return code, DoctorReport.model_validate(json.loads(out)), err


def chooser(*results: tuple[str, bool, str]) -> Chooser:
    """A chooser that reports ``results`` and picks the first that is ok."""

    def choose(order: Sequence[str]) -> tuple[Any, Sequence[AttemptReport]]:
        attempts = [AttemptReport(name=n, ok=ok, reason=r) for n, ok, r in results]
        chosen = next((a for a in attempts if a.ok), None)
        if chosen is None:
            raise BackendError("no usable inference backend (all failed)")
        return chosen, attempts

    return choose


def fake_probes(choose: Chooser | None = None) -> DoctorProbes:
    return DoctorProbes(chooser=choose, prober=fake_probe, live=False)


def test_json_on_this_machine_validates_and_passes(
    capsys: pytest.CaptureFixture[str], store: ModelStore
) -> None:
    code, report, err = doctor_json(capsys)
    assert code == 0, err
    assert report.ok and report.problems == []
    assert report.schema_version == 1
    assert all(f.status == "ok" for f in report.models.files)
    assert {r.role: r.status for r in report.models.roles}["swapper"] == "builtin"
    assert report.backends.chosen in report.backends.order
    assert report.backends.attempts[-1].ok
    if platform.machine() == "x86_64" and not probe().recognisable():
        assert report.profile.name == "x86-cpu"
        assert "nothing recognisable found" in report.profile.reason


def test_text_on_this_machine(capsys: pytest.CaptureFixture[str], store: ModelStore) -> None:
    code, out, _ = doctor(capsys)
    assert code == 0
    assert out.startswith("mirror doctor: the mirror can run here\nprofile   ")
    for heading in ("  why     ", "backends  ", "models    ", "camera    ", "display   ", "gpio "):
        assert heading in out


def test_json_schema_describes_every_section() -> None:
    schema = doctor_json_schema()
    assert set(schema["required"]) >= {
        "ok",
        "problems",
        "warnings",
        "profile",
        "facts",
        "backends",
        "models",
        "camera",
        "display",
        "gpio",
        "thermal",
    }
    assert schema["additionalProperties"] is False


def test_rpi4_coral_root_reports_every_peripheral(
    capsys: pytest.CaptureFixture[str], store: ModelStore, tmp_path: Path
) -> None:
    (
        rpi4_coral(tmp_path)
        .camera(0, "HD Pro Webcam C920")
        .drm("card1-HDMI-A-1")
        .drm("card1-HDMI-A-2", "disconnected")
        .gpiochip(0)
        .thermal(0, 52_000)
    )
    code, report, err = doctor_json(capsys, "--root", str(tmp_path))
    assert code == 0, err
    assert report.profile.name == "rpi4-coral-usb"
    assert "Coral USB accelerator (18d1:9302)" in report.profile.reason
    assert report.backends.attempts[0].name == "edgetpu"  # real chooser
    assert report.camera.found and report.camera.name == "HD Pro Webcam C920"
    assert report.display.ok and report.display.connected == ["card1-HDMI-A-1"]
    assert report.gpio.ok and report.gpio.chips == ["/dev/gpiochip0"]
    assert report.gpio.pins == {"status_led": 17, "button": 27, "fan": 18}
    sensor = report.thermal.sensors[0]
    assert (sensor.path, sensor.status, sensor.temperature_c) == (
        "/sys/class/thermal/thermal_zone0/temp",
        "ok",
        52.0,
    )
    roles = {r.role: r for r in report.models.roles}
    assert roles["detector"].status == "variant"
    assert "face_detector_short" in roles["detector"].detail
    assert not any("camera" in w or "display" in w for w in report.warnings)


def test_missing_models_fail_with_what_to_do(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MIRROR_DATA_DIR", str(tmp_path / "data"))
    code, report, err = doctor_json(capsys)
    assert code == 1
    assert not report.ok
    assert "missing or corrupt" in report.problems[0]
    assert "run `mirror models fetch`" in report.problems[0]
    lines = [line for line in err.splitlines() if line.startswith("mirror:")]
    assert len(lines) == 1 and "mirror models fetch" in lines[0]
    code, out, err = doctor(capsys)
    assert code == 1 and "PROBLEM   " in out and "CANNOT run" in out


def test_corrupt_model_is_named_and_moved_aside(store: ModelStore, tmp_path: Path) -> None:
    cache = tmp_path / "models"
    shutil.copytree(store.cache_dir, cache, ignore=shutil.ignore_patterns("quarantine", "onnx"))
    (cache / store.manifest.entry("face_landmarks").file).write_bytes(b"not a model")
    copy = ModelStore(cache_dir=cache, manifest=store.manifest)
    report = run_doctor(tmp_path, load_profiles(), copy, probes=fake_probes())
    assert not report.ok
    assert "face_landmarks (bad-hash)" in report.problems[0]
    assert {r.role: r.status for r in report.models.roles}["landmarks"] == "bad-hash"
    assert list((cache / "quarantine").iterdir())


def test_no_backend_is_a_problem(store: ModelStore, tmp_path: Path) -> None:
    FakeDevice(tmp_path).base("x86_64")
    probes = fake_probes(chooser(("litert-cpu", False, "broken"), ("onnx-cpu", False, "gone")))
    report = run_doctor(tmp_path, load_profiles(), store, probes=probes)
    assert not report.ok and report.backends.chosen is None
    assert report.problems == [
        "no inference backend works ((all): no usable inference backend (all failed)); "
        "check the runtime install (pip install -e .)"
    ]


def test_coral_fallback_to_cpu_is_a_warning_with_the_reason(
    store: ModelStore, tmp_path: Path
) -> None:
    rpi4_coral(tmp_path).camera().drm("card0-HDMI-A-1").gpiochip().thermal(0, 40_000)
    probes = fake_probes(
        chooser(("edgetpu", False, "no Edge TPU answers"), ("litert-cpu", True, "LiteRT"))
    )
    report = run_doctor(tmp_path, load_profiles(), store, probes=probes)
    assert report.ok and report.backends.chosen == "litert-cpu"
    assert report.warnings == [
        f"probed {tmp_path}: backends and models were checked on the running machine, "
        "not under that root",
        "backend litert-cpu instead of edgetpu (edgetpu: no Edge TPU answers); it runs slower",
    ]


def test_jetson_offline_zone_and_heat(store: ModelStore, tmp_path: Path) -> None:
    base = "sys/devices/virtual/thermal"
    device = FakeDevice(tmp_path).base("aarch64").tegra()
    device.model("NVIDIA Jetson Orin Nano Developer Kit").thermal(0, 88_500, base)
    device.thermal(1, -256_000, base)
    probes = fake_probes(chooser(("tensorrt", True, "TensorRT 10")))
    report = run_doctor(tmp_path, load_profiles(), store, probes=probes)
    assert report.profile.name == "jetson-orin-nano"
    statuses = [(s.status, s.temperature_c) for s in report.thermal.sensors]
    assert statuses == [("ok", 88.5), ("offline", None)]
    assert "88.5 C is above hot (85 C): the mirror runs light" in report.warnings
    assert any("camera /dev/video0 not found" in w for w in report.warnings)
    assert any("no dp display connected" in w for w in report.warnings)
    assert report.ok  # warnings only
    text = render_text(report)
    assert "offline  /sys/devices/virtual/thermal/thermal_zone1/temp" in text


def test_override_that_does_not_match_warns(
    capsys: pytest.CaptureFixture[str], store: ModelStore, tmp_path: Path
) -> None:
    FakeDevice(tmp_path).base("x86_64")
    code, report, _ = doctor_json(capsys, "--root", str(tmp_path), "--profile", "rpi5-cpu")
    assert report.profile.name == "rpi5-cpu" and report.profile.overridden
    assert "profile rpi5-cpu does not match this device" in report.warnings
    assert "the probe alone would pick x86-cpu" in report.profile.reason
    assert code == 0


def test_unknown_profile_and_broken_profiles_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = doctor(capsys, "--profile", "rpi9")
    assert code == 1 and out == ""
    assert err.startswith("mirror: error: unknown hardware profile 'rpi9' (known: ")
    (tmp_path / "x86-cpu.yaml").write_text("name: x86-cpu\ntarget_fps: [\n", encoding="utf-8")
    code, out, err = doctor(capsys, "--profiles-dir", str(tmp_path))
    assert code == 1 and out == ""
    assert err.count("\n") == 1
    assert f"cannot read hardware profile {tmp_path / 'x86-cpu.yaml'}" in err
