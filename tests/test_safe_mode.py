"""`mirror run` with a config.yaml it cannot use: safe mode, not an exit 1 and a restart loop.

The real CLI: the defaults run, the bad file is moved aside unchanged (never
deleted), one warning line says so, and safe mode holds across a restart
while no new settings were saved. As the unit runs it (`--display auto`, the
admin page): `/healthz` names safe mode, the dashboard says it, the HDMI
screen carries the staff note, and a settings save on the admin page ends it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from appliance.modelstore import ModelStore
from tests.screen_fakes import plug_fb
from tests.test_run_cmd import MIRROR, _data_dir, _start
from tests.test_run_screen import HEIGHT, WIDTH, _note_pixels
from tests.test_web_support import FAST_HASH, PASSWORD
from tests.waiting import wait_for
from tests.web_client import Staff, admin_url, changed
from web_ui.auth_store import AuthStore

BAD_FILES = {
    "garbage": "label: [unclosed\n  text: :::\n",
    "wrong types": "swap:\n  keep_mouth: maybe\npipeline:\n  redetect_every: fast\n",
    "not a mapping": "- just\n- a list\n",
}


def _run(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    args = ["run", "--frames", "5", "--no-web", "--no-preview", "--profile", "x86-cpu", *extra]
    return subprocess.run(
        [*MIRROR, *args], capture_output=True, text=True, timeout=300, check=False, env=env
    )


def _kept(folder: Path) -> list[Path]:
    return sorted(folder.glob("config.yaml.bad-*"))


@pytest.mark.parametrize("text", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_config_starts_safe_mode_and_keeps_the_file(
    store: ModelStore, tmp_path: Path, text: str
) -> None:
    _data_dir(tmp_path, store)
    config = tmp_path / "config.yaml"
    config.write_text(text, encoding="utf-8")
    env = {**os.environ, "MIRROR_DATA_DIR": str(tmp_path)}
    proc = _run(env)
    assert proc.returncode == 0, proc.stderr
    assert "5 frames captured" in proc.stdout
    warnings = [line for line in proc.stderr.splitlines() if "safe mode" in line]
    assert len(warnings) >= 1 and warnings[0].startswith("mirror: warning: safe mode: config.yaml")
    (kept,) = _kept(tmp_path)
    assert f"kept as {kept.name}" in warnings[0] and "runs on the defaults" in warnings[0]
    assert str(tmp_path) not in warnings[0]  # /healthz shows it: no data folder path
    assert kept.read_text(encoding="utf-8") == text and not config.exists()
    assert "Traceback" not in proc.stderr and "mirror: error" not in proc.stderr

    again = _run(env)  # restarted: still safe mode, the same kept file, nothing new
    assert again.returncode == 0, again.stderr
    assert (
        f"mirror: warning: safe mode: config.yaml could not be used and is kept as {kept.name}"
        in again.stderr
    )
    assert _kept(tmp_path) == [kept] and kept.read_text(encoding="utf-8") == text


def test_an_explicit_bad_config_is_kept_too_and_a_missing_one_is_still_an_error(
    store: ModelStore, tmp_path: Path
) -> None:
    config = tmp_path / "venue.yaml"
    config.write_text(BAD_FILES["garbage"], encoding="utf-8")
    proc = _run(dict(os.environ), "--config", str(config))
    assert proc.returncode == 0, proc.stderr
    assert "mirror: warning: safe mode: venue.yaml could not be used" in proc.stderr
    assert len(list(tmp_path.glob("venue.yaml.bad-*"))) == 1 and not config.exists()
    missing = _run(dict(os.environ), "--config", str(tmp_path / "typo.yaml"))
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines()[-1] == (
        f"mirror: error: config file {tmp_path / 'typo.yaml'} not found"
    )


def _healthz(staff: Staff) -> dict[str, Any]:
    status, body = staff.get("/healthz")
    assert status in (200, 503), body
    data: dict[str, Any] = json.loads(body)
    return data


def test_safe_mode_shows_on_healthz_dashboard_and_screen_until_a_save(
    store: ModelStore, tmp_path: Path
) -> None:
    data, root = tmp_path / "data", tmp_path / "root"
    data.mkdir()
    web = _data_dir(data, store)
    AuthStore(web / "auth.json", FAST_HASH).provision(PASSWORD, must_change=False)
    (data / "config.yaml").write_text(BAD_FILES["wrong types"], encoding="utf-8")
    device, _ = plug_fb(root, "vc4drmfb", (WIDTH, HEIGHT))
    env = {**os.environ, "MIRROR_DATA_DIR": str(data), "MIRROR_DISPLAY_ROOT": str(root)}
    args = ["--display", "auto", "--profile", "x86-cpu", "--no-preview", "--status-every", "0"]
    proc = _start(args, env)
    try:
        staff = Staff(admin_url(proc))
        (kept,) = _kept(data)
        health = _healthz(staff)
        assert health["status"] == "ok" and health["running"], health  # visitors see a mirror
        assert health["safe_mode"].startswith("config.yaml could not be used (invalid settings")
        assert "swap.keep_mouth='maybe'" in health["safe_mode"]
        assert f"kept as {kept.name}" in health["safe_mode"]
        assert health["degraded"] == [f"safe mode: {health['safe_mode']}"]
        assert wait_for(lambda: _note_pixels(device) > 20, 30.0)  # the staff note on the screen

        staff.login(PASSWORD)
        status, html = staff.get("/")
        assert status == 200 and "Safe mode: config.yaml could not be used" in html
        page = changed(staff.form("/settings"), liveness__mode="blink")
        status, html = staff.post("/settings", page)
        assert status == 200 and "Saved and applied." in html

        assert "safe_mode" not in _healthz(staff)
        assert "Safe mode" not in staff.get("/")[1]
        assert wait_for(lambda: _note_pixels(device) == 0, 30.0)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    saved = yaml.safe_load((data / "config.yaml").read_text(encoding="utf-8"))
    assert saved == {"liveness": {"mode": "blink"}}  # only what staff chose
    assert kept.read_text(encoding="utf-8") == BAD_FILES["wrong types"]  # still kept


def test_a_good_file_reloaded_with_sighup_ends_safe_mode(store: ModelStore, tmp_path: Path) -> None:
    web = _data_dir(tmp_path, store)
    AuthStore(web / "auth.json", FAST_HASH).provision(PASSWORD, must_change=False)
    config = tmp_path / "config.yaml"
    config.write_text(BAD_FILES["garbage"], encoding="utf-8")
    env = {**os.environ, "MIRROR_DATA_DIR": str(tmp_path)}
    proc = _start(["--profile", "x86-cpu", "--no-preview", "--status-every", "0"], env)
    try:
        staff = Staff(admin_url(proc))
        assert "safe_mode" in _healthz(staff)
        config.write_text("label:\n  text: Synthetic face\n", encoding="utf-8")
        proc.send_signal(signal.SIGHUP)
        assert wait_for(lambda: "safe_mode" not in _healthz(staff), 30.0), _healthz(staff)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert f"settings reloaded from {config}: label.text" in err
    assert len(_kept(tmp_path)) == 1
