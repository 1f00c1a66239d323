"""`/metrics` tells nobody on the LAN whether a person is at the mirror without the scrape
token: through a real waitress server on loopback, and `mirror metrics-token` rotating it."""

from __future__ import annotations

import base64
import stat
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from flask import Flask
from prometheus_client.parser import text_string_to_metric_families

from tests.test_cli import mirror as run_mirror
from tests.test_web_support import Mirror, run_frames
from web_ui.server import WebServer, serve


@pytest.fixture
def server(app: Flask, mirror: Mirror) -> Iterator[WebServer]:
    run_frames(mirror, frames=5)
    served = serve(app, "127.0.0.1", 0)
    try:
        yield served
    finally:
        served.stop()


def scrape(server: WebServer, authorization: str | None = None) -> tuple[int, str, str]:
    """(status, body, WWW-Authenticate) of one GET /metrics."""
    headers = {} if authorization is None else {"Authorization": authorization}
    request = urllib.request.Request(f"{server.url}metrics", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode(), ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), exc.headers.get("WWW-Authenticate", "")


def token_of(mirror: Mirror) -> str:
    return (mirror.web_dir / "metrics_token").read_text().strip()


def test_metrics_need_the_scrape_token(server: WebServer, mirror: Mirror) -> None:
    path = mirror.web_dir / "metrics_token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # made at the first start, private
    token = token_of(mirror)
    assert len(token) >= 32

    status, body, challenge = scrape(server)
    assert status == 401 and challenge.startswith("Bearer")
    assert "mirror_faces" not in body and "mirror-metrics" not in body
    for wrong in ("Bearer " + "x" * len(token), f"Bearer {token[:-1]}", "Bearer ", token):
        assert scrape(server, wrong)[0] == 401, wrong

    status, body, _ = scrape(server, f"Bearer {token}")
    assert status == 200
    families = {f.name: f for f in text_string_to_metric_families(body)}
    assert families["mirror_frames_shown"].samples[0].value > 0
    assert "mirror_faces" in families

    basic = base64.b64encode(f"metrics:{token}".encode()).decode()
    assert scrape(server, f"Basic {basic}")[0] == 200  # Prometheus' basic_auth works too
    wrong_basic = base64.b64encode(b"metrics:guess").decode()
    assert scrape(server, f"Basic {wrong_basic}")[0] == 401


def test_mirror_metrics_token_shows_and_rotates_it(server: WebServer, mirror: Mirror) -> None:
    env = {"MIRROR_DATA_DIR": str(mirror.base)}
    old = token_of(mirror)
    shown = run_mirror("metrics-token", env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == f"{old}\n"

    rotated = run_mirror("metrics-token", "--rotate", env=env)
    assert rotated.returncode == 0, rotated.stderr
    new = rotated.stdout.strip()
    assert new != old and new == token_of(mirror)
    assert stat.S_IMODE((mirror.web_dir / "metrics_token").stat().st_mode) == 0o600
    # the running server takes the new token at once, and the old one no more
    assert scrape(server, f"Bearer {old}")[0] == 401
    assert scrape(server, f"Bearer {new}")[0] == 200
