"""The admin page over HTTPS by default: `mirror run` makes the device's own certificate at the
first start (key 0600) and serves the page with it; plain HTTP on the same port only redirects;
the session cookie is Secure; the fingerprint that staff compare with the browser's is the one
`mirror doctor` prints and the HDMI first-boot screen shows."""

from __future__ import annotations

import hashlib
import http.client
import os
import signal
import stat
import subprocess
import sys
import urllib.parse
from pathlib import Path

import numpy as np
from flask import Flask

from appliance.device.certificate import (
    CERT_NAME,
    KEY_NAME,
    ensure_certificate,
    fingerprint_of,
    read_fingerprint,
)
from appliance.media.display_screens import FirstBootScreen, device_ip
from appliance.media.frames import Frame
from appliance.media.overlays import FirstBootInfo, Overlays
from appliance.modelstore import ModelStore
from tests.screen_fakes import Recorder
from tests.test_web_support import PASSWORD, TOKEN_RE, Mirror
from tests.web_served import serve_tls, tls_connection, trusting

MIRROR = [sys.executable, "-m", "appliance.cli.main"]


def _colons(digest: bytes) -> str:
    return ":".join(f"{byte:02X}" for byte in digest)


def _plain_get(port: int, path: str) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def test_mirror_run_serves_https_with_its_own_certificate(
    store: ModelStore, tmp_path: Path
) -> None:
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
        assert "admin page at https://127.0.0.1:" in line, (line, proc.poll())
        port = urllib.parse.urlsplit(line.split("admin page at ")[1].strip()).port
        assert port is not None
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=60, context=trusting(web))
        conn.request("GET", "/login")  # verified against the device's certificate only
        response = conn.getresponse()
        response.read()
        sock = conn.sock
        assert sock is not None
        served = sock.getpeercert(binary_form=True)
        conn.close()
        assert response.status == 200
        redirected = _plain_get(port, "/login?next=x")
        assert redirected.status == 308
        assert redirected.getheader("Location") == f"https://127.0.0.1:{port}/login?next=x"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    fingerprint = _colons(hashlib.sha256(served).digest())
    assert read_fingerprint(web) == fingerprint
    assert stat.S_IMODE((web / KEY_NAME).stat().st_mode) == 0o600
    doctor = subprocess.run(
        [*MIRROR, "doctor"], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert f"admin     certificate SHA-256 {fingerprint}" in doctor.stdout.splitlines(), (
        doctor.stdout
    )


def test_the_session_cookie_is_secure_and_plain_http_only_redirects(
    app: Flask, mirror: Mirror
) -> None:
    server = serve_tls(app, mirror.web_dir)
    try:
        conn = tls_connection(server, mirror.web_dir)
        conn.request("GET", "/login")
        page = conn.getresponse()
        token = TOKEN_RE.search(page.read().decode())
        assert token is not None
        form = {"username": "admin", "password": PASSWORD, "csrf_token": token.group(1)}
        cookie = (page.getheader("Set-Cookie") or "").split(";")[0]
        conn.request(
            "POST",
            "/login",
            body=urllib.parse.urlencode(form),
            headers={"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"},
        )
        logged_in = conn.getresponse()
        logged_in.read()
        conn.close()
        assert logged_in.status == 302
        flags = [f.strip().lower() for f in (logged_in.getheader("Set-Cookie") or "").split(";")]
        assert {"secure", "httponly", "samesite=lax"} <= set(flags), flags
        plain = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        plain.request(
            "POST",
            "/login",
            body=urllib.parse.urlencode(form),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        answer = plain.getresponse()
        answer.read()
        plain.close()
        assert answer.status == 308 and answer.getheader("Set-Cookie") is None
        assert answer.getheader("Location") == f"https://127.0.0.1:{server.port}/login"
    finally:
        server.stop()


def test_the_certificate_is_made_once_and_kept(tmp_path: Path) -> None:
    first = ensure_certificate(tmp_path, ["192.0.2.5"])
    assert stat.S_IMODE((tmp_path / KEY_NAME).stat().st_mode) == 0o600
    assert ensure_certificate(tmp_path).fingerprint == first.fingerprint
    assert first.fingerprint == fingerprint_of((tmp_path / CERT_NAME).read_text())
    (tmp_path / KEY_NAME).chmod(0o644)
    assert ensure_certificate(tmp_path).fingerprint == first.fingerprint
    assert stat.S_IMODE((tmp_path / KEY_NAME).stat().st_mode) == 0o600
    (tmp_path / KEY_NAME).unlink()  # a lost key: a new pair, a new fingerprint
    assert ensure_certificate(tmp_path).fingerprint != first.fingerprint


def test_the_first_boot_screen_shows_the_certificates_fingerprint(
    store: ModelStore, tmp_path: Path
) -> None:
    overlays = Overlays(store.path("label_font"))
    notice = tmp_path / "first-boot.txt"
    notice.write_text("user: admin\npassword: Ab3d-Ef4h-Jk6m-Np7q\n", encoding="utf-8")
    screen = Recorder()
    sink = FirstBootScreen(screen, overlays, notice, 8000)
    mirror = np.full((480, 640, 3), 77, np.uint8)
    with sink:
        sink.write(Frame(mirror.copy(), 0, 0))  # before the first start made the certificate
        fingerprint = ensure_certificate(tmp_path).fingerprint
        sink.write(Frame(mirror.copy(), 1, 1))
    before, after = screen.images
    ip = device_ip()
    expected = FirstBootInfo(ip, f"https://{ip}:8000/", "Ab3d-Ef4h-Jk6m-Np7q", fingerprint)
    assert np.array_equal(after, overlays.first_boot_screen((640, 480), expected))
    assert not np.array_equal(after, before)
