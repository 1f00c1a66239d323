"""Admin UI security: first-start password, login, lockout, forced change, CSRF, headers."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest
from flask import Flask
from werkzeug.datastructures import Authorization

from tests.test_web_support import (
    PASSWORD,
    FakeClock,
    Mirror,
    build_app,
    login,
    page_token,
    post,
)
from web_ui.app import create_app
from web_ui.auth_store import ALPHABET, USERNAME, AuthStore, generate_password
from web_ui.ratelimit import LoginLimiter
from web_ui.security import CSP

PAGES = ["/", "/api/status", "/preview", "/preview.jpg", "/preview.mjpg", "/settings",
         "/identities", "/logs", "/password", "/identities/x/preview.jpg"]  # fmt: skip
POSTS = ["/settings", "/identities", "/identities/x/rename", "/identities/x/activate",
         "/identities/x/delete", "/swapping", "/password", "/logout"]  # fmt: skip


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def app(mirror: Mirror, clock: FakeClock) -> Flask:
    return build_app(mirror, limiter=LoginLimiter(clock=clock))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_first_start_generates_a_password_once(mirror: Mirror) -> None:
    announced: list[str] = []
    create_app(mirror.control, mirror.web_dir, announce=announced.append)
    assert len(announced) == 1
    password = announced[0]
    assert re.fullmatch(rf"[{ALPHABET}]{{4}}(-[{ALPHABET}]{{4}}){{3}}", password)
    auth = mirror.web_dir / "auth.json"
    assert _mode(auth) == 0o600 and _mode(mirror.web_dir / "secret_key") == 0o600
    stored = json.loads(auth.read_text())
    assert password not in auth.read_text() and stored["password_hash"].startswith(
        "scrypt:32768:8:1$"
    )
    assert stored["must_change"] is True
    key = (mirror.web_dir / "secret_key").read_bytes()
    again: list[str] = []
    app = create_app(mirror.control, mirror.web_dir, announce=again.append)
    assert again == [] and app.config["SECRET_KEY"] == key
    assert AuthStore(auth).verify(USERNAME, password)


def test_generated_passwords_differ() -> None:
    assert len({generate_password() for _ in range(20)}) == 20


def test_every_page_needs_a_login(app: Flask) -> None:
    client = app.test_client()
    for path in PAGES:
        response = client.get(path)
        if path.startswith("/api/"):
            assert response.status_code == 401 and response.json == {"error": "log in first"}
        else:
            assert response.status_code == 302, path
            assert response.location.endswith("/login"), path
    token = page_token(client)
    for path in POSTS[:-1]:
        response = client.post(path, data={"csrf_token": token})
        assert response.status_code == 302 and response.location.endswith("/login"), path


def test_health_needs_no_login_and_metrics_their_scrape_token(app: Flask, mirror: Mirror) -> None:
    client = app.test_client()
    assert client.get("/healthz").json == {
        "status": "degraded",
        "running": False,
        "reason": "the pipeline is not running",
    }
    assert client.get("/metrics").status_code == 401  # see tests/test_metrics_auth.py
    token = (mirror.web_dir / "metrics_token").read_text().strip()
    assert client.get("/metrics", auth=Authorization("bearer", token=token)).status_code == 200


def test_login_and_logout(app: Flask) -> None:
    client = app.test_client()
    response = login(client)
    assert response.status_code == 302 and response.location == "/"
    assert client.get("/").status_code == 200
    assert client.get("/login").status_code == 302  # already logged in
    assert client.get("/logout").status_code == 405  # logging out changes state: POST only
    response = post(client, "/logout")
    assert response.status_code == 302 and response.location.endswith("/login")
    assert client.get("/").status_code == 302
    assert "Logged out." in client.get("/login").text


def test_wrong_password_says_so(app: Flask) -> None:
    client = app.test_client()
    response = login(client, "not the password")
    assert response.status_code == 401
    assert "Wrong user name or password." in response.text
    response = login(client, PASSWORD, username="root")
    assert response.status_code == 401


def test_repeated_wrong_passwords_lock_the_login(app: Flask, clock: FakeClock) -> None:
    client = app.test_client()
    for _ in range(4):
        assert login(client, "guess").status_code == 401
    response = login(client, "guess")
    assert response.status_code == 429
    assert "Too many attempts; try again in 60 s." in response.text
    assert response.headers["Retry-After"] == "60"
    # locked: even the right password is refused, with the time left
    clock.now += 15
    response = login(client, PASSWORD)
    assert response.status_code == 429 and "try again in 45 s" in response.text
    clock.now += 46
    assert login(client, PASSWORD).status_code == 302


def test_lockout_doubles_for_the_same_address(app: Flask, clock: FakeClock) -> None:
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = "10.0.0.7"
    for _ in range(5):
        response = login(client, "guess")
    assert response.status_code == 429 and "try again in 60 s" in response.text
    clock.now += 61
    for _ in range(5):
        response = login(client, "guess")
    assert response.status_code == 429 and "try again in 120 s" in response.text


def test_first_login_forces_a_password_change(mirror: Mirror) -> None:
    app = build_app(mirror, password="generated-1234", must_change=True)
    client = app.test_client()
    response = login(client, "generated-1234")
    assert response.location.endswith("/password")
    for path in ("/", "/settings", "/identities"):
        assert client.get(path).location.endswith("/password"), path
    assert client.get("/api/status").status_code == 403
    assert "Choose your own password" in client.get("/password").text

    def change(current: str, new: str, confirm: str | None = None) -> str:
        data = {"current": current, "new": new, "confirm": new if confirm is None else confirm}
        response = post(client, "/password", data)
        assert response.status_code == 400
        return response.text

    assert "at least 10 characters" in change("generated-1234", "short")
    assert "must differ from the current one" in change("generated-1234", "generated-1234")
    assert "not the same" in change("generated-1234", "a new password", "another one!")
    assert "current password is wrong" in change("wrong-current", "a new password")
    assert client.get("/").location.endswith("/password")  # still forced

    response = post(
        client,
        "/password",
        {"current": "generated-1234", "new": "a new password", "confirm": "a new password"},
    )
    assert response.status_code == 302 and response.location == "/"
    assert client.get("/").status_code == 200
    stored = json.loads((mirror.web_dir / "auth.json").read_text())
    assert stored["must_change"] is False
    assert login(app.test_client(), "generated-1234").status_code == 401
    assert login(app.test_client(), "a new password").location == "/"


def test_a_password_change_ends_other_logins(app: Flask) -> None:
    first, second = app.test_client(), app.test_client()
    login(first)
    login(second)
    new = "another password"
    post(first, "/password", {"current": PASSWORD, "new": new, "confirm": new})
    assert first.get("/").status_code == 200
    assert second.get("/").location.endswith("/login")


def test_missing_or_wrong_csrf_token_is_rejected(app: Flask, mirror: Mirror) -> None:
    client = app.test_client()
    client.get("/login")
    form = {"username": USERNAME, "password": PASSWORD}
    for extra in ({}, {"csrf_token": "forged"}, {"csrf_token": ""}):
        response = client.post("/login", data={**form, **extra})
        assert response.status_code == 400
        assert "reload the page and try again" in response.text
    assert client.get("/").status_code == 302  # not logged in
    login(client)
    before = mirror.settings_path.read_bytes()
    for extra in ({}, {"csrf_token": "forged"}):
        response = client.post("/settings", data={"label.text": "HACKED", **extra})
        assert response.status_code == 400
        response = client.post("/swapping", data={"enabled": "false", **extra})
        assert response.status_code == 400
    assert mirror.settings_path.read_bytes() == before
    assert mirror.control.swapping_enabled and mirror.processor.identity is not None
    # the header works too (for scripts), and the page's own token is the session's
    token = page_token(client, "/settings")
    response = client.post("/swapping", data={"enabled": "false"}, headers={"X-CSRF-Token": token})
    assert response.status_code == 302 and not mirror.control.swapping_enabled


def test_security_headers_and_cookie_flags(app: Flask) -> None:
    client = app.test_client()
    response = client.get("/login")
    assert response.headers["Content-Security-Policy"] == CSP
    for directive in ("default-src 'self'", "script-src 'self'", "frame-ancestors 'none'",
                      "style-src 'self'", "form-action 'self'", "base-uri 'none'"):  # fmt: skip
        assert directive in CSP
    assert "unsafe-inline" not in CSP
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    secure = app.test_client().get("/login", base_url="https://mirror.local")
    assert "Secure" in secure.headers["Set-Cookie"]


def test_pages_have_no_inline_script_style_or_external_assets(app: Flask) -> None:
    client = app.test_client()
    login(client)
    pages = ["/", "/preview", "/settings", "/identities", "/logs", "/password"]
    for path in pages:
        html = client.get(path).text
        assert 'name="viewport"' in html, path
        assert not re.search(r"<script(?![^>]*\bsrc=)", html), path
        assert not re.search(r"\sstyle=|<style|\son[a-z]+=", html), path
        assert not re.search(r"(src|href)=\"(https?:)?//", html), path
    for asset in ("style.css", "dashboard.js"):
        response = client.get(f"/static/{asset}")
        assert response.status_code == 200 and b"http" not in response.data


def test_the_first_password_change_ends_the_first_boot_notice(tmp_path: Path) -> None:
    """Provisioning leaves the one-time password for the display; changing it removes it."""
    store = AuthStore(tmp_path / "auth.json")
    first = store.provision(must_change=True)
    notice = tmp_path / "first-boot.txt"
    notice.write_text(f"admin password: {first}\n", encoding="utf-8")
    store.change(first, "a much better passphrase")
    assert not notice.exists()
    assert store.verify(USERNAME, "a much better passphrase")
