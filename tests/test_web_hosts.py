"""DNS rebinding, through the real server over HTTPS on loopback: only the device's own names
and addresses are served, and a state change must come from one of them.

A page on another site that points its name at the mirror makes the admin's browser send that
site's name as ``Host`` and its own origin as ``Origin``: both used to be accepted (the origin
was compared with the request's own ``Host``).
"""

from __future__ import annotations

import http.client
import socket
import urllib.parse
from collections.abc import Iterator

import pytest
from flask import Flask

from tests.test_web_support import Mirror, build_app
from tests.web_served import https_opener, log_in, serve_tls, tls_connection
from web_ui.config import WebConfig
from web_ui.hosts import owns_address
from web_ui.server import WebServer

FOREIGN = "rebind.attacker.example"


@pytest.fixture
def app(mirror: Mirror) -> Flask:
    return build_app(mirror, config=WebConfig(allowed_hosts=("Mirror.Venue.example",)))


@pytest.fixture
def server(app: Flask, mirror: Mirror) -> Iterator[WebServer]:
    served = serve_tls(app, mirror.web_dir)
    yield served
    served.stop()


def _status(server: WebServer, mirror: Mirror, host: str) -> tuple[int, str]:
    conn = tls_connection(server, mirror.web_dir)
    try:
        conn.request("GET", "/login", headers={"Host": host})
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def _lan_address() -> str | None:
    """This machine's address towards the LAN, when it has one besides loopback."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))
            address = str(probe.getsockname()[0])
    except OSError:
        return None
    return None if address.startswith("127.") else address


def test_only_the_devices_own_names_and_addresses_are_served(
    server: WebServer, mirror: Mirror
) -> None:
    port = server.port
    name = socket.gethostname().lower()
    own = [
        f"127.0.0.1:{port}",
        f"localhost:{port}",
        f"LOCALHOST:{port}",
        f"[::1]:{port}",
        f"{name}:{port}",
        f"{name}.local:{port}",
        f"mirror.venue.example:{port}",  # web.yaml's allowed_hosts
        "127.0.0.1",
    ]
    lan = _lan_address()
    if lan is not None:
        own.append(f"{lan}:{port}")
    assert {host: _status(server, mirror, host)[0] for host in own} == dict.fromkeys(own, 200)
    foreign = [
        f"{FOREIGN}:{port}",
        FOREIGN,
        f"{name}.attacker.example:{port}",
        f"192.0.2.7:{port}",  # an address, but not this machine's
        f"[2001:db8::7]:{port}",
        f"0.0.0.0:{port}",
        "bad host!",
    ]
    answers = {host: _status(server, mirror, host) for host in foreign}
    assert {host: status for host, (status, _) in answers.items()} == dict.fromkeys(foreign, 400)
    assert "not this mirror&#39;s name or address" in answers[f"{FOREIGN}:{port}"][1]
    assert "allowed_hosts in web.yaml" in answers[FOREIGN][1]


def test_a_rebound_page_cannot_drive_the_admin_api(server: WebServer, mirror: Mirror) -> None:
    """The admin is logged in; a page of the attacker's, its name rebound to the mirror's
    address, posts the swapping switch with the admin's cookie and a token it read."""
    opener = https_opener(mirror.web_dir)
    token = log_in(opener, server.url)
    cookie = "; ".join(
        f"{c.name}={c.value}"
        for handler in opener.handlers
        for c in getattr(handler, "cookiejar", [])
    )
    mirror.control.set_swapping(True)
    body = urllib.parse.urlencode({"enabled": "false", "csrf_token": token})
    host = f"{FOREIGN}:{server.port}"
    conn = tls_connection(server, mirror.web_dir)
    conn.request(
        "POST",
        "/swapping",
        body=body,
        headers={
            "Host": host,
            "Origin": f"https://{host}",
            "Cookie": cookie,
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    response = conn.getresponse()
    response.read()
    conn.close()
    assert response.status == 400
    assert mirror.control.swapping_enabled  # still on


def _post_with_origin(server: WebServer, mirror: Mirror, origin: str) -> int:
    opener = https_opener(mirror.web_dir)
    token = log_in(opener, server.url)
    cookie = "; ".join(
        f"{c.name}={c.value}"
        for handler in opener.handlers
        for c in getattr(handler, "cookiejar", [])
    )
    mirror.control.set_swapping(True)
    conn: http.client.HTTPSConnection = tls_connection(server, mirror.web_dir)
    conn.request(
        "POST",
        "/swapping",
        body=urllib.parse.urlencode({"enabled": "false", "csrf_token": token}),
        headers={
            "Origin": origin,
            "Cookie": cookie,
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status


def test_the_origin_must_be_one_of_the_devices_hosts_on_this_port(
    server: WebServer, mirror: Mirror
) -> None:
    port = server.port
    assert _post_with_origin(server, mirror, f"https://{FOREIGN}:{port}") == 400
    assert _post_with_origin(server, mirror, f"https://127.0.0.1:{port + 1}") == 400
    assert _post_with_origin(server, mirror, f"https://localhost:{port}") == 302
    assert not mirror.control.swapping_enabled  # the last one, from our own page, went through


def test_owned_addresses() -> None:
    assert owns_address("127.0.0.1") and owns_address("::1") and owns_address("127.3.4.5")
    assert not owns_address("192.0.2.7") and not owns_address("0.0.0.0")
    assert not owns_address("not an address")
