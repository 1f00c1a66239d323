"""A member of staff on the admin page over real HTTP (a real server on loopback).

``Staff`` keeps its own cookie session and sends a page's form as a browser
would: every field with the value the page shows (a ticked checkbox after its
hidden "false"), so a test can change some fields of a page opened earlier.
"""

from __future__ import annotations

import http.cookiejar
import ssl
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from html.parser import HTMLParser

Fields = list[tuple[str, str]]


class _FormReader(HTMLParser):
    """The fields of the form posting to ``action``, in page order."""

    def __init__(self, action: str) -> None:
        super().__init__(convert_charrefs=True)
        self.action = action
        self.fields: Fields = []
        self._inside = False
        self._select: str | None = None
        self._options: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {key: value or "" for key, value in attrs}
        if tag == "form":
            self._inside = a.get("action") == self.action
        elif not self._inside:
            return
        elif tag == "input" and a.get("name"):
            kind = a.get("type", "text")
            if kind != "checkbox" or "checked" in a:
                self.fields.append((a["name"], a.get("value", "")))
        elif tag == "select":
            self._select, self._options = a.get("name"), []
        elif tag == "option" and self._select is not None:
            self._options.append((a.get("value", ""), "selected" in a))

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._inside = False
        elif tag == "select" and self._select is not None:
            chosen = [value for value, selected in self._options if selected]
            first = [value for value, _ in self._options[:1]]
            self.fields.append((self._select, (chosen or first or [""])[0]))
            self._select = None


def form_fields(html: str, action: str) -> Fields:
    reader = _FormReader(action)
    reader.feed(html)
    assert reader.fields, f"no form posting to {action}"
    return reader.fields


def changed(fields: Fields, **values: str) -> Fields:
    """``fields`` with each named one (dots spelled ``__``) set to its new value."""
    out = list(fields)
    for key, value in values.items():
        name = key.replace("__", ".")
        out = [(n, v) for n, v in out if n != name] + [(name, value)]
    return out


class Staff:
    """One browser: its own session cookie; redirects followed; any status returned."""

    def __init__(self, url: str) -> None:
        self.url = url
        handlers: list[urllib.request.BaseHandler] = [
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        ]
        if url.startswith("https:"):  # the device's own certificate: not checked here
            handlers.append(urllib.request.HTTPSHandler(context=ssl._create_unverified_context()))
        self._opener = urllib.request.build_opener(*handlers)

    def get(self, path: str) -> tuple[int, str]:
        return self._open(path, None)

    def post(self, path: str, fields: Fields) -> tuple[int, str]:
        return self._open(path, urllib.parse.urlencode(fields).encode())

    def send(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
        """POST ``body`` as a page's script does, with its own headers (a CSRF token, a type)."""
        return self._open(path, body, headers)

    def form(self, path: str, action: str | None = None) -> Fields:
        status, html = self.get(path)
        assert status == 200, (status, html[:300])
        return form_fields(html, action or path)

    def login(self, password: str, username: str = "admin") -> None:
        fields = changed(self.form("/login"), username=username, password=password)
        status, html = self.post("/login", fields)
        assert status == 200 and "Log out" in html, (status, html[:500])

    def _open(
        self, path: str, data: bytes | None, headers: dict[str, str] | None = None
    ) -> tuple[int, str]:
        request = urllib.request.Request(self.url.rstrip("/") + path, data, headers or {})
        try:
            with self._opener.open(request, timeout=60) as response:
                return response.status, response.read().decode("utf-8")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode("utf-8", "replace")


def admin_url(proc: subprocess.Popen[str]) -> str:
    """The admin page's address (HTTPS or HTTP), from the first line `mirror run` prints."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "admin page at http" in line, (line, proc.poll())
    return line.split("admin page at ")[1].strip()
