"""A Raspberry Pi with a Coral, read against Google's real parts: without libedgetpu (which
Debian does not carry) or compiled ``_edgetpu`` models the Coral profiles run on the CPU,
and `mirror doctor` names each missing part and where it comes from.

The device is a faked root; this machine has neither libedgetpu nor a TPU, as a fresh
Raspberry Pi OS has not. Every faked device also goes through the real commands: none
ends in a traceback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from appliance.device.catalog import load_profiles
from appliance.doctor.doctor import DoctorProbes, run_doctor
from appliance.doctor.vendor_check import VendorInputs, check_vendor
from appliance.errors import BackendFallbackWarning
from appliance.modelstore import ModelStore
from tests.test_hardware import DEVICES, FakeDevice, fake_probe, rpi4_coral
from tests.test_jetson import JP5, JP62, ORIN

REPO = Path(__file__).resolve().parent.parent
LIB = "usr/lib/aarch64-linux-gnu/libedgetpu.so.1"


def _doctor_warnings(root: Path, store: ModelStore) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendFallbackWarning)
        probes = DoctorProbes(prober=fake_probe, live=True)  # as on the Pi itself
        report = run_doctor(root, load_profiles(), store, probes=probes)
    assert report.ok and report.backends.chosen == "litert-cpu"
    return report.warnings


def test_a_coral_without_googles_parts_runs_on_the_cpu_and_is_told_why(
    store: ModelStore, tmp_path: Path
) -> None:
    device = rpi4_coral(tmp_path)
    found = _doctor_warnings(device.root, store)
    assert (
        "libedgetpu.so.1 (the Edge TPU runtime) is not installed: it is libedgetpu1-std from "
        "Google's Coral apt repository, not a Debian package (bring its .deb with `mirror "
        "provision bundle --vendor DIR`, see the README's Coral paragraph); the models run on "
        "the CPU (LiteRT) instead"
    ) in found
    cache = store.cache_dir
    for base in ("face_detector", "face_detection_full_range"):
        assert (
            f"no Edge TPU compiled variant {base}_edgetpu.tflite in {cache}: compile a full-int8 "
            f"{base}.tflite with edgetpu_compiler (Google's, x86-64 Debian/Ubuntu only) and "
            f"bring it with `mirror provision bundle --vendor DIR`; {base}.tflite runs on the "
            "CPU (LiteRT) instead"
        ) in found
    # the runtime installed under the device's root: that part is no longer named
    device.write(LIB, b"\x7fELF")
    found = _doctor_warnings(device.root, store)
    assert not any(line.startswith("libedgetpu.so.1 (the Edge TPU runtime)") for line in found)


def test_compiled_models_beside_the_cpu_models_are_found(store: ModelStore, tmp_path: Path) -> None:
    cache = tmp_path / "models"
    cache.mkdir()
    for name in ("face_detector_short", "face_detector_full"):
        cpu = store.file_path(name)
        shutil.copyfile(cpu, cache / f"{cpu.stem}_edgetpu.tflite")
    FakeDevice(tmp_path).write(LIB, b"\x7fELF")
    profile = load_profiles()["rpi5-coral"]
    facts = fake_probe(rpi4_coral(tmp_path / "pi").root)
    given = VendorInputs(root=tmp_path)
    found = check_vendor(profile, facts, ModelStore(cache_dir=cache), "edgetpu", given)
    assert (found.missing, found.broken) == ([], [])


def test_mirror_run_on_a_coral_profile_without_the_runtime_runs_on_the_cpu(
    tmp_path: Path,
) -> None:
    args = ["run", "--profile", "rpi4-coral-usb", "--frames", "3", "--no-web", "--no-preview"]
    done = subprocess.run(
        [sys.executable, "-m", "appliance.cli.main", *args, "--status-every", "0"],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "skipped   edgetpu: libedgetpu.so.1 (the Edge TPU runtime) is not installed" in (
        done.stderr
    )
    assert "detector    face_detector.tflite on litert-cpu" in done.stderr


FAKED = {
    **{name: make for name, make in DEVICES.items() if "coral" in name},
    "jetson-orin-nano-jp62": lambda r: FakeDevice(r).base("aarch64").model(ORIN).tegra(JP62),
    "jetson-orin-nano-jp5": lambda r: FakeDevice(r).base("aarch64").model(ORIN).tegra(JP5),
    "jetson-xavier-nx": DEVICES["jetson-xavier-nx"],
}


@pytest.mark.parametrize("device", sorted(FAKED))
def test_no_faked_target_ends_in_a_traceback(device: str, tmp_path: Path) -> None:
    FAKED[device](tmp_path)
    for extra in ([], ["--json"]):
        done = subprocess.run(
            [sys.executable, "-m", "appliance.cli.main", "doctor", "--root", str(tmp_path), *extra],
            capture_output=True, text=True, timeout=300, check=False,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        assert "Traceback" not in done.stderr, done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("mirror: error")]
        if "jp5" in device or "xavier" in device:
            assert done.returncode == 1 and len(errors) == 1, done.stderr
            assert "cannot run here" in errors[0]
        else:
            assert done.returncode == 0 and errors == [], done.stderr
