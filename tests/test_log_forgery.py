"""Nobody on the LAN can forge a log line or push the security events out of the logs page.

A request path carries ``%0A`` and other control characters: on stderr (the journal)
and on the admin logs page they show escaped, never as a line of their own. Logins,
wrong passwords and lock-outs are kept apart from other warnings, so a flood of
requests from anyone cannot evict them.
"""

from __future__ import annotations

import http.client
import io
import logging
import os
import signal
import ssl
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from appliance.control.log_buffer import SECURITY_EVENT, LogBuffer
from appliance.log_text import CONTINUED, SafeFormatter, escape_controls
from appliance.modelstore import ModelStore
from tests.login_visitor import Visitor
from tests.test_web_support import Mirror, build_app
from web_ui.server import serve

MIRROR = [sys.executable, "-m", "appliance.cli.main"]
FAKE = "2024-01-01 00:00:00,000 INFO web_ui.blueprints.auth: admin logged in from 10.6.6.6"
FORGED_PATH = "/x" + urllib.parse.quote("\r\n" + FAKE + "\x1b[2K\u2028" + FAKE)


def _post(url: str, path: str, host: str | None = None) -> int:
    """POST ``path`` (already %-encoded) with no CSRF token; the status."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https":  # the device's own certificate: this test is not about TLS
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            parts.hostname or "", parts.port, timeout=60, context=context
        )
    else:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Connection": "close"}
    if host is not None:
        headers["Host"] = host
    try:
        conn.request("POST", path, body="a=1", headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_a_forged_request_path_writes_no_line_of_its_own_on_stderr(
    store: ModelStore, tmp_path: Path
) -> None:
    """`mirror -v run` (INFO on stderr, as the journal gets it): the path's CR LF are escaped."""
    (tmp_path / "models").symlink_to(store.cache_dir)
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "web.yaml").write_text("port: 0\n", encoding="utf-8")
    env = {**os.environ, "MIRROR_DATA_DIR": str(tmp_path)}
    proc = subprocess.Popen(
        [*MIRROR, "-v", "run", "--no-preview", "--status-every", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "admin page at " in line, (line, proc.poll())
        assert _post(line.split("admin page at ")[1].strip(), FORGED_PATH) == 400
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    lines = err.splitlines()
    assert not [x for x in lines if x.startswith(FAKE[:23]) or "\x1b" in x or "\u2028" in x]
    logged = [x for x in lines if "rejected POST /x" in x]
    assert len(logged) == 1 and "/x\\r\\n" + FAKE + "\\x1b[2K\\u2028" + FAKE in logged[0]


def test_security_events_survive_a_flood_and_show_on_the_logs_page(mirror: Mirror) -> None:
    server = serve(build_app(mirror), "127.0.0.1", 0)
    try:
        assert Visitor(server, "127.0.0.9").login("guess") == 401
        url = server.url
        for n in range(100):  # anyone on the LAN: no login, no token, odd paths and hosts
            assert _post(url, FORGED_PATH) == 400
            assert _post(url, f"/login?n={n}") == 400
            assert _post(url, "/settings", host=f"rebound-{n}.example") in (302, 400)
        staff = Visitor(server, "127.0.0.10")
        assert staff.login() == 302
        status, page = staff.request("GET", "/logs")
    finally:
        server.stop()
    assert status == 200
    security = page.split('id="security-events"')[1].split("</table>")[0]
    assert "failed admin login from 127.0.0.9" in security
    assert "admin logged in from 127.0.0.10" in security
    assert "10.6.6.6" not in page  # the forged path: neither an event nor a warning here


def test_the_log_buffer_keeps_security_events_apart_and_escaped() -> None:
    buffer = LogBuffer(capacity=5, security_capacity=3)
    log = logging.getLogger("web_ui.test_forgery")
    log.propagate = False
    log.setLevel(logging.INFO)
    buffer.attach(log)
    try:
        log.info("admin logged in from %s", "10.0.0.1", extra={SECURITY_EVENT: True})
        log.warning("failed admin login from %s", "10.0.0.2", extra={SECURITY_EVENT: True})
        for n in range(300):
            log.warning("rejected POST %s", f"/x{n}\n{FAKE}")
        log.info("an everyday detail")
    finally:
        buffer.detach()
    entries = buffer.entries()
    assert [e.message for e in entries if e.security] == [
        "failed admin login from 10.0.0.2",
        "admin logged in from 10.0.0.1",
    ]
    others = [e for e in entries if not e.security]
    assert len(others) == 5 and others[0].message == f"rejected POST /x299\\n{FAKE}"


def test_the_formatter_puts_one_record_on_one_line_and_marks_traceback_lines() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(SafeFormatter("%(levelname)s %(name)s: %(message)s"))
    log = logging.getLogger("web_ui.test_formatter")
    log.propagate = False
    log.addHandler(handler)
    try:
        log.warning("rejected %s", f"/a\r\n{FAKE}\x00\x85\u202e")
        try:
            raise ValueError(f"bad\n{FAKE}")
        except ValueError:
            log.exception("failed")
    finally:
        log.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert lines[0] == f"WARNING web_ui.test_formatter: rejected /a\\r\\n{FAKE}\\x00\\x85\\u202e"
    assert lines[1] == "ERROR web_ui.test_formatter: failed"
    assert all(line.startswith(CONTINUED) for line in lines[2:])
    assert f"{CONTINUED}{FAKE}" in lines and escape_controls("é\t") == "é\\t"


@pytest.mark.parametrize("char", ["\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"])
def test_no_line_break_survives_escaping(char: str) -> None:
    assert len(escape_controls(f"a{char}b").splitlines()) == 1
