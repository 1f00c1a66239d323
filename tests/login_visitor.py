"""A browser on the admin page from a loopback address of its choice (this module holds no tests).

Every address in 127.0.0.0/8 is the machine's own, so ``Visitor(server, "127.0.0.23")``
connects from 127.0.0.23 to a real server on 127.0.0.1: each visitor is another
client address to the login limits. Plain HTTP (``serve`` without ``tls``); a
cookie session of its own, one connection per request.
"""

from __future__ import annotations

import http.client
import http.cookies
import re
import urllib.parse

from tests.test_web_support import PASSWORD
from web_ui.auth_store import USERNAME
from web_ui.server import WebServer

TOKEN_RE = re.compile(r'name="csrf_token" value="([^"]+)"')


class Visitor:
    """One client at ``source`` (an address of this machine) of ``server``."""

    def __init__(self, server: WebServer, source: str) -> None:
        self.host = server.host
        self.port = server.port
        self.source = source
        self.cookies: dict[str, str] = {}

    def request(
        self, method: str, path: str, form: dict[str, str] | None = None
    ) -> tuple[int, str]:
        """(status, body) of one request (``form`` is sent URL-encoded)."""
        conn = http.client.HTTPConnection(
            self.host, self.port, timeout=60, source_address=(self.source, 0)
        )
        headers = {"Connection": "close"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            text = response.read().decode("utf-8", "replace")
            for value in response.headers.get_all("Set-Cookie") or []:
                for name, morsel in http.cookies.SimpleCookie(value).items():
                    self.cookies[name] = morsel.value
            return response.status, text
        finally:
            conn.close()

    def login(self, password: str = PASSWORD, username: str = USERNAME) -> int:
        """The status of a login as the page's form sends it (302: logged in)."""
        status, page = self.request("GET", "/login")
        match = TOKEN_RE.search(page)
        assert status == 200 and match, (status, page[:300])
        form = {"username": username, "password": password, "csrf_token": match.group(1)}
        return self.request("POST", "/login", form)[0]
