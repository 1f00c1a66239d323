"""The admin app served as ``mirror run`` serves it (HTTPS, the device's own certificate) on
loopback, and clients that trust that certificate and nothing else (this module holds no
tests)."""

from __future__ import annotations

import http.client
import http.cookiejar
import socket
import ssl
import urllib.parse
import urllib.request
from pathlib import Path

from flask import Flask

from appliance.device.certificate import DeviceCertificate, ensure_certificate
from tests.test_web_support import PASSWORD, TOKEN_RE
from web_ui.server import WebServer, serve


def serve_tls(app: Flask, directory: Path, host: str = "127.0.0.1") -> WebServer:
    """``app`` over HTTPS on ``host`` (a free port), with the certificate in ``directory``."""
    return serve(app, host, 0, tls=ensure_certificate(directory, [host]).server_context())


def trusting(directory: Path) -> ssl.SSLContext:
    """A client context that trusts the device certificate in ``directory`` only."""
    cert = ensure_certificate(directory)
    return ssl.create_default_context(cafile=str(cert.cert_path))


def certificate(directory: Path) -> DeviceCertificate:
    return ensure_certificate(directory)


def tls_connection(
    server: WebServer, directory: Path, source: str | None = None
) -> http.client.HTTPSConnection:
    """An HTTPS connection to ``server`` (from the loopback address ``source``, if given)."""
    return http.client.HTTPSConnection(
        server.host,
        server.port,
        timeout=60,
        context=trusting(directory),
        source_address=(source, 0) if source else None,
    )


def tls_socket(server: WebServer, directory: Path, source: str | None = None) -> ssl.SSLSocket:
    """A raw TLS socket to ``server``, the handshake done."""
    raw = socket.create_connection(
        (server.host, server.port), timeout=60, source_address=(source, 0) if source else None
    )
    return trusting(directory).wrap_socket(raw, server_hostname=server.host)


def read_head(sock: socket.socket) -> bytes:
    """The response's status line and headers (b"" when the server closed first)."""
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def https_opener(directory: Path) -> urllib.request.OpenerDirector:
    """An opener with cookies that trusts the device certificate."""
    return urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()),
        urllib.request.HTTPSHandler(context=trusting(directory)),
    )


def log_in(opener: urllib.request.OpenerDirector, url: str) -> str:
    """Log ``opener`` in at ``url`` (the server's root); returns the page's CSRF token."""
    with opener.open(f"{url}login", timeout=60) as response:
        token = TOKEN_RE.search(response.read().decode())
    assert token is not None
    form = {"username": "admin", "password": PASSWORD, "csrf_token": token.group(1)}
    with opener.open(f"{url}login", urllib.parse.urlencode(form).encode(), timeout=60) as page:
        found = TOKEN_RE.search(page.read().decode())
    assert found is not None, "not logged in"
    return found.group(1)
