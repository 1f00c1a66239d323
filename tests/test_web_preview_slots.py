"""Live-preview slots over a real server (plain HTTP and HTTPS): clients that stop reading
lose theirs.

Raw sockets log in with the session cookie, ask for the stream and never
read; real photos flow through the preview hub meanwhile. A fourth client
must still get frames within a bounded time, and every end is logged
without a traceback.
"""

from __future__ import annotations

import http.cookiejar
import logging
import socket
import ssl
import struct
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest
from flask import Flask

from tests.test_web_support import PASSWORD, TOKEN_RE, Mirror, build_app, photo
from tests.web_served import serve_tls
from web_ui.config import WebConfig
from web_ui.context import web_context
from web_ui.server import WebServer, serve

STALL_S = 2.0
CLIENT_TLS = ssl.create_default_context()  # the certificate itself: tests/test_web_tls.py
CLIENT_TLS.check_hostname = False
CLIENT_TLS.verify_mode = ssl.CERT_NONE
BOUND_S = 30.0  # the stalled clients' buffers fill, then STALL_S: measured ~4 s here


@pytest.fixture
def app(mirror: Mirror) -> Flask:
    return build_app(mirror, config=WebConfig(preview_stall_s=STALL_S))


@pytest.fixture(params=["http", "https"])
def server(app: Flask, mirror: Mirror, request: pytest.FixtureRequest) -> Iterator[WebServer]:
    """The server, with real photos published to the preview as fast as a camera would."""
    hub = mirror.control.preview_sink.hub
    hub.reopen()
    stop = threading.Event()
    frames = [photo("astronaut"), photo("grace_hopper")]

    def publish() -> None:
        count = 0
        while not stop.is_set():
            hub.publish(frames[count % 2])
            count += 1
            stop.wait(1 / 60)

    publisher = threading.Thread(target=publish, daemon=True)
    publisher.start()
    if request.param == "https":
        server = serve_tls(app, mirror.web_dir)
    else:
        server = serve(app, "127.0.0.1", 0)
    try:
        yield server
    finally:
        stop.set()
        server.stop()
        hub.close()
        publisher.join(5)


def _opener(server: WebServer) -> tuple[urllib.request.OpenerDirector, str]:
    """A logged-in opener and its session cookie."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(jar), urllib.request.HTTPSHandler(context=CLIENT_TLS)
    )
    with opener.open(f"{server.url}login", timeout=10) as response:
        token = TOKEN_RE.search(response.read().decode())
    assert token is not None
    form = {"username": "admin", "password": PASSWORD, "csrf_token": token.group(1)}
    with opener.open(f"{server.url}login", urllib.parse.urlencode(form).encode(), timeout=10):
        pass
    cookie = next(c for c in jar if c.name == "mirror_session")
    assert cookie.value
    return opener, f"{cookie.name}={cookie.value}"


def _never_reading(server: WebServer, cookie: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    if server.tls is not None:
        sock = CLIENT_TLS.wrap_socket(sock, server_hostname="127.0.0.1")
    request = f"GET /preview.mjpg HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookie}\r\n\r\n"
    sock.sendall(request.encode("ascii"))
    return sock


def _first_part(opener: urllib.request.OpenerDirector, server: WebServer) -> bytes | None:
    """The first bytes of the stream, or None when the server says all slots are busy."""
    try:
        with opener.open(f"{server.url}preview.mjpg", timeout=10) as stream:
            return bytes(stream.read(9))
    except urllib.error.HTTPError as exc:
        assert exc.code == 503
        return None


def test_clients_that_stop_reading_do_not_keep_the_preview(
    app: Flask, server: WebServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    opener, cookie = _opener(server)
    stalled = [_never_reading(server, cookie) for _ in range(3)]
    try:
        deadline = time.monotonic() + 5
        while len(web_context(app).preview) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(web_context(app).preview) == 3
        start = time.monotonic()
        assert _first_part(opener, server) is None  # all busy at first: a clear refusal
        part = None
        while part is None and time.monotonic() - start < BOUND_S:
            time.sleep(0.5)
            part = _first_part(opener, server)
        waited = time.monotonic() - start
        assert part == b"--frame\r\n", f"no slot for a reading client within {BOUND_S} s"
        logging.getLogger(__name__).info("a fourth client got frames after %.1f s", waited)
        for sock in stalled:  # the server closed each stalled connection
            sock.settimeout(10)
            while sock.recv(1 << 20):
                pass
    finally:
        for sock in stalled:
            sock.close()
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    closed = [r for r in caplog.records if "read nothing for" in r.getMessage()]
    assert len(closed) == 3


def test_a_client_that_resets_the_connection_is_let_go_quietly(
    app: Flask, server: WebServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    _, cookie = _opener(server)
    for _ in range(3):
        sock = _never_reading(server, cookie)
        assert sock.recv(64).startswith(b"HTTP/1.1 200")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # a reset, as from a phone that lost the network
    deadline = time.monotonic() + 10
    while len(web_context(app).preview) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(web_context(app).preview) == 0
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
