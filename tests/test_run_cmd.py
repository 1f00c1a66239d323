"""`mirror run` as a service: SIGTERM stops it cleanly with a summary; the admin page comes up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from appliance.modelstore import ModelStore

MIRROR = [sys.executable, "-m", "appliance.cli.main"]


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
    (tmp_path / "models").symlink_to(store.cache_dir)
    web = tmp_path / "web"
    web.mkdir()
    (web / "web.yaml").write_text("port: 0\n", encoding="utf-8")
    env = {**os.environ, "MIRROR_DATA_DIR": str(tmp_path)}
    proc = subprocess.Popen(
        [*MIRROR, "run", "--no-preview", "--status-every", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "admin page at http://127.0.0.1:" in line, line
        url = line.split("admin page at ")[1].strip()
        with urllib.request.urlopen(url + "healthz", timeout=10) as response:
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
