"""What the LAN can do to the admin page's connections, through the real server over HTTPS on
loopback: big bodies are refused before they are read or spooled, and clients that send half a
request (and a byte now and then) neither keep others out nor keep their connections.

Linux lets a socket send from any 127.x.y.z address, so each attacker and each staff member
below has an address of their own.
"""

from __future__ import annotations

import os
import socket
import ssl
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask

from tests.test_web_support import Mirror, build_app
from tests.waiting import wait_for
from tests.web_served import read_head, serve_tls, tls_connection, tls_socket
from web_ui.front import MAX_PER_CLIENT
from web_ui.server import WebServer, max_body_bytes

SLOW_CLIENTS = 110  # waitress alone serves 100 connections, then stops accepting
HUGE = 300 * 2**20


@pytest.fixture
def app(mirror: Mirror) -> Flask:
    return build_app(mirror)


@pytest.fixture
def server(app: Flask, mirror: Mirror) -> Iterator[WebServer]:
    served = serve_tls(app, mirror.web_dir)
    mirror.telemetry.set_running(True, "test")
    yield served
    served.stop()


def _largest_spool(spool: Path) -> int:
    """The size of the largest open file in ``spool`` (this process's; 0 when none)."""
    largest = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(str(spool)):
                largest = max(largest, os.fstat(int(fd)).st_size)
        except OSError:
            continue
    return largest


@pytest.fixture
def spool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the server's temporary files go (``tempfile``'s folder) during the test."""
    folder = tmp_path / "spool"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _login_head(server: WebServer, extra: str) -> bytes:
    return (
        f"POST /login HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Content-Type: application/x-www-form-urlencoded\r\n{extra}\r\n"
    ).encode("ascii")


def test_a_huge_login_body_is_refused_from_its_length_before_it_is_sent(
    server: WebServer, mirror: Mirror, spool: Path
) -> None:
    with tls_socket(server, mirror.web_dir) as sock:
        sock.sendall(_login_head(server, f"Content-Length: {HUGE}\r\n"))
        head = read_head(sock)  # not one byte of the body sent
    assert head.startswith(b"HTTP/1.1 413"), head
    assert _largest_spool(spool) == 0


def test_a_huge_chunked_login_body_is_refused_once_it_is_too_long(
    server: WebServer, mirror: Mirror, spool: Path
) -> None:
    chunk = b"a" * 2**20
    framed = f"{len(chunk):x}\r\n".encode("ascii") + chunk + b"\r\n"
    sent = 0
    largest = 0
    head = b""
    with tls_socket(server, mirror.web_dir) as sock:
        sock.sendall(_login_head(server, "Transfer-Encoding: chunked\r\n"))
        sock.settimeout(0.0)
        while sent < HUGE:
            try:
                head += sock.recv(4096)
            except ssl.SSLWantReadError:
                pass
            except OSError:
                break
            if b"\r\n\r\n" in head:
                break
            sock.settimeout(60)
            try:
                sock.sendall(framed)
            except OSError:  # closed after its answer
                break
            sent += len(chunk)
            largest = max(largest, _largest_spool(spool))
            sock.settimeout(0.0)
        sock.settimeout(60)
        if b"\r\n\r\n" not in head:
            head += read_head(sock)
    assert head.startswith(b"HTTP/1.1 413"), (head, sent)
    assert sent < 4 * max_body_bytes(server.app)  # not the 300 MiB
    assert largest <= max_body_bytes(server.app) + 2**20


class SlowLoris:
    """Clients that each send half a request, then a byte every second, from addresses of
    their own (or all from one); half of them over TLS, half plain."""

    def __init__(self, server: WebServer, mirror: Mirror, count: int, one_address: bool) -> None:
        self.socks: list[socket.socket] = []
        self.refused = 0  # closed before the half request was sent
        for n in range(count):
            source = "127.0.9.1" if one_address else f"127.0.{10 + n // 200}.{1 + n % 200}"
            try:
                sock = self._connect(server, mirror, source, tls=bool(n % 2))
            except OSError:  # closed at once: over a limit
                self.refused += 1
                continue
            self.socks.append(sock)
        self._lock = threading.Lock()  # one thread at a time on a TLS socket
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._trickle, daemon=True)
        self._thread.start()

    @staticmethod
    def _connect(server: WebServer, mirror: Mirror, source: str, tls: bool) -> socket.socket:
        if tls:
            sock: socket.socket = tls_socket(server, mirror.web_dir, source)
        else:  # plain HTTP: the front hands it over as it is
            sock = socket.create_connection(
                (server.host, server.port), timeout=60, source_address=(source, 0)
            )
        sock.sendall(f"GET /login HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n".encode())
        return sock

    def _trickle(self) -> None:
        while not self._stop.wait(1.0):
            with self._lock:
                for sock in self.socks:
                    try:
                        sock.sendall(b"X")
                    except OSError:
                        continue

    def open(self) -> int:
        """How many of them the server has not closed."""
        with self._lock:
            return sum(1 for sock in self.socks if not _closed(sock))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for sock in self.socks:
            sock.close()


def _closed(sock: socket.socket) -> bool:
    try:
        sock.settimeout(0.0)
        data = sock.recv(4096)
    except (ssl.SSLWantReadError, BlockingIOError):
        return False
    except OSError:
        return True
    finally:
        sock.settimeout(60)
    return not data or data.startswith(b"HTTP/1.1 4")


def _get(server: WebServer, mirror: Mirror, path: str, source: str) -> int:
    conn = tls_connection(server, mirror.web_dir, source)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_half_requests_do_not_keep_staff_out_and_are_closed(
    server: WebServer, mirror: Mirror
) -> None:
    loris = SlowLoris(server, mirror, SLOW_CLIENTS, one_address=False)
    try:
        assert _get(server, mirror, "/healthz", "127.0.0.2") == 200
        assert _get(server, mirror, "/login", "127.0.0.3") == 200
        assert loris.refused == 0 and loris.open() > 100  # all being served
        assert wait_for(lambda: loris.open() == 0, timeout_s=120), loris.open()
    finally:
        loris.close()


def test_one_address_cannot_take_every_connection(server: WebServer, mirror: Mirror) -> None:
    loris = SlowLoris(server, mirror, SLOW_CLIENTS, one_address=True)
    try:
        assert wait_for(lambda: loris.open() <= MAX_PER_CLIENT), loris.open()
        assert _get(server, mirror, "/healthz", "127.0.0.2") == 200
    finally:
        loris.close()
