"""`mirror run` as a service: SIGTERM stops it cleanly with a summary; the admin page comes up."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from appliance.modelstore import ModelStore
from tests.test_supervision import FakeSystemd, systemd  # noqa: F401 (a fixture)

MIRROR = [sys.executable, "-m", "appliance.cli.main"]
# the admin page's own certificate is checked in tests/test_web_tls.py
_TLS = ssl.create_default_context()
_TLS.check_hostname = False
_TLS.verify_mode = ssl.CERT_NONE


def test_sigterm_stops_the_mirror_cleanly_with_a_summary() -> None:
    proc = subprocess.Popen(
        [*MIRROR, "run", "--port", "0", "--status-every", "0.5", "--no-web"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert "preview at http://127.0.0.1:" in proc.stdout.readline()
        status = proc.stdout.readline()
        assert "fps in" in status and "full quality" in status, status
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "ended: stop requested" in out, out
    assert "Traceback" not in err


def test_mirror_run_serves_the_admin_page_and_announces_the_password(
    store: ModelStore, tmp_path: Path
) -> None:
    """A fresh device: the admin page comes up with a generated password, said once."""
    web = _data_dir(tmp_path, store)
    env = {**os.environ, "MIRROR_DATA_DIR": str(tmp_path)}
    proc = _start(["--no-preview", "--status-every", "0"], env)
    try:
        url = _admin_url(proc)
        with urllib.request.urlopen(url + "healthz", timeout=10, context=_TLS) as response:
            health = json.loads(response.read())
        assert set(health) == {"status", "running"} and health["running"] is True
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert err.count("admin password (first start") == 1
    assert (web / "auth.json").stat().st_mode & 0o777 == 0o600
    password = err.split("at first login): ")[1].split()[0]
    notice = web / "first-boot.txt"  # for the screen, until the first login
    assert notice.stat().st_mode & 0o777 == 0o600
    assert f"password: {password}" in notice.read_text(encoding="utf-8")


def test_mirror_run_without_its_camera_stays_up_says_why_and_stops_on_sigterm(
    store: ModelStore,
    tmp_path: Path,
    systemd: tuple[FakeSystemd, str],  # noqa: F811
) -> None:
    """The service starts before its USB camera: no exit 1 and restart loop, but the admin
    page up, /healthz 503 naming the camera, READY and the watchdog heartbeat for systemd,
    and exit 0 on SIGTERM."""
    fake, socket_path = systemd
    _data_dir(tmp_path, store)
    missing = _missing_video_node()
    env = {
        **os.environ,
        "MIRROR_DATA_DIR": str(tmp_path),
        "NOTIFY_SOCKET": socket_path,
        "WATCHDOG_USEC": "2000000",
    }
    proc = _start(["--source", missing, "--no-preview", "--status-every", "0"], env)
    try:
        url = _admin_url(proc)
        assert fake.wait_for("READY=1", 60.0), fake.messages
        beats = [m for m in fake.receive(3.0) if m == "WATCHDOG=1"]
        assert len(beats) >= 2, fake.messages  # fed while waiting for the camera
        status, health = _healthz(url)
        assert status == 503 and health["status"] == "degraded" and health["running"], health
        assert health["reason"].startswith("camera missing:") and missing in health["reason"]
        assert proc.poll() is None  # still up: no exit 1, so no restart loop
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "ended: stop requested" in out, out
    assert "Traceback" not in err and "mirror: error" not in err, err
    assert f"camera {missing} not found" in err


def test_a_video_file_that_cannot_be_opened_still_fails_the_run(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*MIRROR, "run", "--source", str(tmp_path / "absent.mp4"), "--no-web", "--no-preview"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("mirror: error: ") and "absent.mp4" in lines[-1], proc.stderr
    assert "Traceback" not in proc.stderr


def _data_dir(base: Path, store: ModelStore) -> Path:
    """A device's data folder: the verified models, and the admin page on any free port."""
    (base / "models").symlink_to(store.cache_dir)
    web = base / "web"
    web.mkdir()
    (web / "web.yaml").write_text("port: 0\n", encoding="utf-8")
    return web


def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*MIRROR, "run", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def _admin_url(proc: subprocess.Popen[str]) -> str:
    """The admin page's address, from the first line `mirror run` prints."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "admin page at https://127.0.0.1:" in line, (line, proc.poll())
    return line.split("admin page at ")[1].strip()


def _missing_video_node() -> str:
    number = 90
    while Path(f"/dev/video{number}").exists():
        number += 1
    return f"/dev/video{number}"


def _healthz(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url + "healthz", timeout=10, context=_TLS) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
