"""``mirror doctor``'s updates section, the real command in a subprocess: both A/B slots as
RAUC reports them (a fake ``rauc`` first on PATH, ``tests.fake_rauc``: this machine has
no A/B image), the last status the update installer wrote, and a system without RAUC.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from appliance.device.report import DoctorReport
from appliance.updates.queue import UpdateStatus, write_status
from appliance.updates.recent import booted_at
from tests.fake_rauc import install_fake_rauc, path_with, rauc_calls
from tests.test_run_cmd import MIRROR


def _data(tmp_path: Path) -> Path:
    """A device's data folder with the verified models."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "models").symlink_to(Path(os.environ["MIRROR_DATA_DIR"]) / "models")
    return data


def _doctor(data: Path, path: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MIRROR_DATA_DIR": str(data), "PATH": path}
    return subprocess.run(
        [*MIRROR, "doctor", "--profile", "x86-cpu", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


def test_doctor_shows_both_slots_and_the_last_update(tmp_path: Path) -> None:
    rauc = install_fake_rauc(tmp_path / "bin")
    data = _data(tmp_path)
    failed = UpdateStatus("failed", "rauc install: signature invalid", None, "x.raucb", time.time())
    write_status(data, failed)
    done = _doctor(data, path_with(rauc))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("updates   A/B slots: A runs, A boots next")
    assert lines[at + 1] == (
        "  A       rootfs.0 1.4.0 (installed 2026-12-05T10:00:00Z): booted, good; runs, boots next"
    )
    assert lines[at + 2] == "  B       rootfs.1 as flashed: inactive, bad"
    assert lines[at + 3].startswith("  last    failed: rauc install: signature invalid (20")
    assert rauc_calls(rauc) == ["status --detailed --output-format=json"]

    write_status(data, UpdateStatus("rebooting", "rebooting into B", 100, "", booted_at() - 60))
    done = _doctor(data, path_with(rauc), "--json")
    assert done.returncode == 0, done.stderr
    updates = DoctorReport.model_validate(json.loads(done.stdout)).updates
    assert updates.detail == ""
    a, b = updates.slots
    assert (a.bootname, a.version, a.runs, a.boots_next, a.boot_good) == (
        "A",
        "1.4.0",
        True,
        True,
        True,
    )
    assert (b.bootname, b.version, b.runs, b.boots_next, b.boot_good) == (
        "B",
        "",
        False,
        False,
        False,
    )
    assert updates.last is not None
    assert (updates.last.state, updates.last.percent) == ("rebooting", 100)
    assert not updates.last.under_way  # written before this boot: over


def test_doctor_without_rauc_says_there_are_no_slots(tmp_path: Path) -> None:
    empty = tmp_path / "bin"  # a PATH with no rauc on it, as on an install without the image
    empty.mkdir()
    data = _data(tmp_path)
    done = _doctor(data, str(empty))
    assert done.returncode == 0, done.stderr
    assert "\nupdates   no A/B slots (installed without the image)\n" in done.stdout
    assert "  last    " not in done.stdout  # no update ever ran here
    report = DoctorReport.model_validate(json.loads(_doctor(data, str(empty), "--json").stdout))
    assert report.updates.model_dump() == {
        "slots": [],
        "detail": "no A/B slots (installed without the image)",
        "last": None,
    }
