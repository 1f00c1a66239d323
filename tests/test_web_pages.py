"""Admin UI pages over a real pipeline run: dashboard, preview, logs, health, metrics, serving."""

from __future__ import annotations

import dataclasses
import http.cookiejar
import json
import logging
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from appliance.pipeline.snapshot import TelemetrySnapshot
from tests.test_web_support import (
    PASSWORD,
    TOKEN_RE,
    Mirror,
    build_app,
    build_mirror,
    login,
    post,
    run_frames,
)
from web_ui.server import serve


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mirror]:
    """One mirror that has processed real demo frames (shared: these tests only read it)."""
    mirror = build_mirror(tmp_path_factory.mktemp("ran"))
    run_frames(mirror)
    yield mirror
    mirror.control.close()


@pytest.fixture(scope="module")
def app(ran: Mirror) -> Flask:
    return build_app(ran)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    client = app.test_client()
    login(client)
    return client


def test_dashboard_shows_the_live_figures(client: FlaskClient, ran: Mirror) -> None:
    html = client.get("/").text
    labels = ["Output fps", "Latency p50", "Latency p95", "Faces tracked", "Frames dropped",
              "Uptime", "Camera", "test-profile", "litert-cpu", "a note: its reason"]  # fmt: skip
    for label in labels:
        assert label in html, label
    assert 'src="/static/dashboard.js"' in html
    status = client.get("/api/status").json
    assert status is not None
    snap = ran.telemetry.snapshot()
    assert status["telemetry"]["frames_out"] == snap.frames_out > 0
    assert status["telemetry"]["e2e_ms"]["p95"] is not None
    assert status["hardware"]["profile"] == "test-profile"
    assert status["identity"] == "grace_hopper" and status["swapping"] is True
    assert status["health"] == "degraded"  # the run has ended
    json.dumps(status, allow_nan=False)


def test_new_telemetry_fields_show_without_code_changes(tmp_path: Path) -> None:
    @dataclasses.dataclass(frozen=True)
    class Extended(TelemetrySnapshot):
        extra_gauge_c: float = 61.5
        extra_state: str = "warm"
        extra_group: dict[str, object] = dataclasses.field(
            default_factory=lambda: {"score": 0.25, "verdict": "live"}
        )

    mirror = build_mirror(tmp_path)
    try:
        base = mirror.telemetry.snapshot()
        extended = Extended(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)})
        mirror.control.snapshot = lambda: extended  # type: ignore[method-assign]
        client = build_app(mirror).test_client()
        login(client)
        html = client.get("/").text
        for label in ("Extra gauge c", "61.5", "Extra state", "warm", "Extra group · score",
                      "0.2", "Extra group · verdict", "live"):  # fmt: skip
            assert label in html, label
        status = client.get("/api/status").json
        assert status is not None and status["extras"]["extra_group.verdict"] == "live"
        text = client.get("/metrics").text
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert families["mirror_extra_gauge_c"].samples[0].value == 61.5
        assert families["mirror_extra_state"].samples[0].labels == {"value": "warm"}
        assert families["mirror_extra_group_score"].samples[0].value == 0.25
        assert families["mirror_extra_group_verdict"].samples[0].labels == {"value": "live"}
    finally:
        mirror.control.close()


def test_thermal_and_liveness_are_on_the_dashboard(client: FlaskClient) -> None:
    status = client.get("/api/status").json
    assert status is not None
    html = client.get("/").text
    for key in status["extras"]:
        assert f'data-key="extras.{key}"' in html, key


def test_swapping_can_be_turned_off_and_on(tmp_path: Path) -> None:
    mirror = build_mirror(tmp_path)
    try:
        client = build_app(mirror).test_client()
        login(client)
        assert post(client, "/swapping", {"enabled": "false"}).status_code == 302
        assert mirror.processor.identity is None
        state = json.loads((mirror.web_dir / "state.json").read_text())
        assert state == {"active": None, "swapping": False}
        assert "Turn swapping on" in client.get("/").text
        post(client, "/swapping", {"enabled": "true"})
        assert mirror.processor.identity is not None
    finally:
        mirror.control.close()


def test_logs_show_recent_warnings_and_errors(client: FlaskClient) -> None:
    log = logging.getLogger("appliance.test_web")
    log.info("an everyday detail 7f3a")
    log.warning("the camera is warm 7f3a")
    log.error("a stage failed <b>7f3a</b>")
    html = client.get("/logs").text
    assert "the camera is warm 7f3a" in html
    assert "a stage failed &lt;b&gt;7f3a&lt;/b&gt;" in html  # escaped
    assert "an everyday detail" not in html
    assert html.index("a stage failed") < html.index("the camera is warm")  # newest first


def test_healthz_needs_no_login_and_tells_no_secrets(app: Flask, ran: Mirror) -> None:
    anonymous = app.test_client()
    response = anonymous.get("/healthz")
    assert response.status_code == 503
    assert response.json == {
        "status": "degraded",
        "running": False,
        "reason": "the pipeline is not running",
    }
    ran.telemetry.set_running(True, "test")
    try:
        response = anonymous.get("/healthz")
        assert response.status_code == 200 and response.json == {"status": "ok", "running": True}
        ran.telemetry.camera_lost("camera /dev/video9 not found (is it plugged in?)")
        response = anonymous.get("/healthz")
        assert response.status_code == 503 and response.json == {
            "status": "degraded",
            "running": True,
            "reason": "camera missing: camera /dev/video9 not found (is it plugged in?)",
        }
        ran.telemetry.camera_ok()
    finally:
        ran.telemetry.set_running(False, "test")


def test_metrics_parse_as_prometheus_text(app: Flask, ran: Mirror) -> None:
    token = (ran.web_dir / "metrics_token").read_text().strip()
    response = app.test_client().get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    snap = ran.telemetry.snapshot()
    shown = families["mirror_frames_shown"]
    assert shown.type == "counter" and shown.samples[0].value == snap.frames_out
    assert families["mirror_frames_captured"].samples[0].value == snap.frames_in
    fps = {s.labels["direction"]: s.value for s in families["mirror_fps"].samples}
    assert set(fps) == {"input", "output"}
    quantiles = {s.labels["quantile"] for s in families["mirror_e2e_latency_ms"].samples}
    assert quantiles == {"0.5", "0.95", "0.99"}
    stages = {s.labels["stage"] for s in families["mirror_stage_latency_ms"].samples}
    assert {"process", "queue"} <= stages
    assert families["mirror_running"].samples[0].value == 0.0
    assert "WebPreviewSink" in {s.labels["sink"] for s in families["mirror_sink_written"].samples}


def test_the_preview_needs_a_login(app: Flask) -> None:
    anonymous = app.test_client()
    for path in ("/preview", "/preview.jpg", "/preview.mjpg"):
        assert anonymous.get(path).location.endswith("/login"), path


def test_the_preview_shows_the_labelled_output(client: FlaskClient) -> None:
    assert '<img src="/preview.mjpg"' in client.get("/preview").text
    single = client.get("/preview.jpg")
    assert single.status_code == 200 and single.mimetype == "image/jpeg"
    image = cv2.imdecode(np.frombuffer(single.data, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None and image.shape == (240, 320, 3)

    stream = client.get("/preview.mjpg", buffered=False)
    assert stream.mimetype == "multipart/x-mixed-replace"
    part = next(iter(stream.response))
    assert isinstance(part, bytes)
    stream.close()
    head, _, body = part.partition(b"\r\n\r\n")
    assert head.startswith(b"--frame\r\nContent-Type: image/jpeg")
    assert body.rstrip(b"\r\n") == single.data


def test_too_many_open_previews_are_refused(app: Flask, client: FlaskClient) -> None:
    limit = app.extensions["face_mirror"].config.max_preview_clients
    open_streams = [client.get("/preview.mjpg", buffered=False) for _ in range(limit)]
    try:
        refused = client.get("/preview.mjpg")
        assert refused.status_code == 503 and "Too many live previews" in refused.text
    finally:
        for stream in open_streams:
            stream.close()
    again = client.get("/preview.mjpg", buffered=False)
    assert again.status_code == 200
    again.close()


def test_served_by_waitress_and_stopped(app: Flask, ran: Mirror) -> None:
    server = serve(app, "127.0.0.1", 0)
    ran.telemetry.set_running(True, "test")
    try:
        assert server.port > 0
        with urllib.request.urlopen(f"{server.url}healthz", timeout=10) as response:
            assert response.headers["Server"] == "face-mirror"
            assert json.loads(response.read()) == {"status": "ok", "running": True}
        token = (ran.web_dir / "metrics_token").read_text().strip()
        scrape = urllib.request.Request(
            f"{server.url}metrics", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(scrape, timeout=10) as response:
            assert b"mirror_frames_shown_total" in response.read()
        with urllib.request.urlopen(f"{server.url}settings", timeout=10) as response:
            assert response.url.endswith("/login")  # redirected: not logged in
    finally:
        ran.telemetry.set_running(False, "test")
        server.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{server.url}healthz", timeout=2)


def test_stopping_the_server_ends_open_preview_streams(app: Flask, ran: Mirror) -> None:
    hub = ran.control.preview_sink.hub
    hub.reopen()  # as while the mirror runs: the stream waits for the next frame
    server = serve(app, "127.0.0.1", 0)
    thread = server._thread
    try:
        opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        with opener.open(f"{server.url}login", timeout=10) as response:
            token = TOKEN_RE.search(response.read().decode())
        assert token is not None
        form = {"username": "admin", "password": PASSWORD, "csrf_token": token.group(1)}
        opener.open(f"{server.url}login", urllib.parse.urlencode(form).encode(), timeout=10)
        stream = opener.open(f"{server.url}preview.mjpg", timeout=10)
        assert stream.headers["Content-Type"].startswith("multipart/x-mixed-replace")
        assert stream.read(9) == b"--frame\r\n"
    finally:
        server.stop()
        hub.close()
    assert thread is not None and not thread.is_alive()
    assert len(app.extensions["face_mirror"].preview) == 0
    stream.close()


def test_liveness_off_and_a_hot_device_are_warnings_on_the_dashboard(tmp_path: Path) -> None:
    mirror = build_mirror(tmp_path)
    try:
        client = build_app(mirror).test_client()
        login(client)
        assert client.get("/api/status").json["warnings"] == []
        mirror.telemetry.set_liveness(1, 0, "off")
        mirror.telemetry.set_thermal("hot", 86.0, "test")
        warnings = client.get("/api/status").json["warnings"]
        assert any("Liveness is off" in w for w in warnings)
        assert any("hot" in w for w in warnings)
        assert "a photo held up to the camera is swapped too" in client.get("/").text
    finally:
        mirror.control.close()
