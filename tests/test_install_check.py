"""`mirror doctor` says what the matched profile's extras need and this environment lacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from appliance.device.catalog import load_profiles
from appliance.doctor.install_check import check_install, venv_sees_system_packages

REQUIRES = [
    "numpy<3,>=1.24",
    "opencv-python-headless>=4.10; 'tegra' not in platform_release",
    "onnxruntime>=1.18; extra == 'cpu'",
    "onnxruntime-gpu>=1.18; extra == 'gpu'",
    "pygame-ce>=2.5; extra == 'pi'",
    "numpy<2,>=1.24; python_version < '3.12' and extra == 'pi'",
]


def versions(**have: str) -> dict[str, str]:
    return {name.replace("_", "-"): v for name, v in have.items()}


def test_pi_profile_on_a_numpy2_venv_names_the_pin_and_the_command() -> None:
    pi = load_profiles()["rpi4-cpu"].install
    have = versions(numpy="2.4.6", opencv_python_headless="4.11.0")
    report = check_install(pi, requires=REQUIRES, version_of=have.get, sees_system=False)
    assert "pygame-ce>=2.5 (not installed)" in report.missing
    if sys.version_info < (3, 12):
        assert "numpy<2,>=1.24 (found 2.4.6)" in report.missing
    assert report.command is not None and "'face-mirror[pi]'" in report.command
    assert report.system_site_packages_wanted and not report.system_site_packages


def test_gpu_profile_flags_both_onnxruntimes() -> None:
    gpu = load_profiles()["x86-nvidia"].install
    have = versions(
        numpy="2.1", opencv_python_headless="5.0", onnxruntime="1.20", onnxruntime_gpu="1.20"
    )
    report = check_install(gpu, requires=REQUIRES, version_of=have.get, sees_system=False)
    assert report.missing == []
    assert report.command is None
    assert any("onnxruntime and onnxruntime-gpu" in c for c in report.conflicts)


def test_complete_environment_has_nothing_to_say() -> None:
    cpu = load_profiles()["x86-cpu"].install
    have = versions(numpy="2.1", opencv_python_headless="5.0", onnxruntime="1.20")
    report = check_install(cpu, requires=REQUIRES, version_of=have.get, sees_system=False)
    assert (report.missing, report.conflicts, report.command) == ([], [], None)


def test_pyvenv_cfg_is_read(tmp_path: Path) -> None:
    (tmp_path / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = true\n")
    assert venv_sees_system_packages(tmp_path)
    (tmp_path / "pyvenv.cfg").write_text("include-system-site-packages = false\n")
    assert not venv_sees_system_packages(tmp_path)


def test_doctor_reports_the_install_check_for_the_matched_profile() -> None:
    """Through the real command: this venv has no pygame-ce pin problem for x86-cpu, but
    the Pi profile wants the system's packages, which this venv does not see."""
    cmd = [sys.executable, "-m", "appliance.cli.main", "doctor", "--json", "--profile", "rpi4-cpu"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    report = json.loads(proc.stdout)
    assert report["install"]["extras"] == ["pi"]
    assert report["install"]["system_site_packages_wanted"] is True
    assert any("system's Python packages" in w for w in report["warnings"])
