"""Logins are closed on the server: a copied session cookie stops working at logout."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient

from tests.test_web_support import PASSWORD, FakeClock, Mirror, login, post
from web_ui.sessions import SessionRegistry

COOKIE = "mirror_session"


def _copy(client: FlaskClient, app: Flask) -> FlaskClient:
    """Another client holding a copy of ``client``'s session cookie, as a thief would."""
    cookie = client.get_cookie(COOKIE)
    assert cookie is not None
    thief = app.test_client()
    thief.set_cookie(COOKIE, cookie.value)
    return thief


def _csrf(client: FlaskClient) -> str:
    with client.session_transaction() as session:
        return str(session["csrf"])


def test_a_cookie_copied_before_logout_is_refused_after_it(app: Flask, mirror: Mirror) -> None:
    client = app.test_client()
    login(client)
    thief = _copy(client, app)
    token = _csrf(thief)
    assert thief.get("/api/status").status_code == 200  # the copy works while logged in
    assert post(client, "/logout").location.endswith("/login")
    assert thief.get("/").location.endswith("/login")
    assert thief.get("/api/status").status_code == 401
    response = thief.post("/swapping", data={"enabled": "false", "csrf_token": token})
    assert response.status_code == 302 and response.location.endswith("/login")
    assert mirror.control.swapping_enabled  # the state change was refused
    login(client)
    assert client.get("/").status_code == 200  # a new login works


def test_a_password_change_closes_every_other_login_and_earlier_copies(app: Flask) -> None:
    """Regression guard: the generation check covered this before; the login ids do too now."""
    first, second = app.test_client(), app.test_client()
    login(first)
    login(second)
    copy_of_first, copy_of_second = _copy(first, app), _copy(second, app)
    new = "another password"
    response = post(first, "/password", {"current": PASSWORD, "new": new, "confirm": new})
    assert response.status_code == 302
    assert first.get("/").status_code == 200  # the one that changed it stays logged in
    for other in (second, copy_of_first, copy_of_second):
        assert other.get("/api/status").status_code == 401


def test_the_registry_closes_expired_and_oldest_logins() -> None:
    clock = FakeClock()
    registry = SessionRegistry(lifetime_s=100, max_sessions=2, clock=clock)
    a = registry.open()
    clock.now += 60
    b = registry.open()
    assert registry.alive(a) and registry.alive(b) and not registry.alive("forged")
    assert not registry.alive(None)
    clock.now += 50
    assert not registry.alive(a) and registry.alive(b)  # a's 100 s are over
    c, d = registry.open(), registry.open()
    assert not registry.alive(b) and len(registry) == 2  # bounded: the oldest went
    registry.close(c)
    assert not registry.alive(c) and registry.alive(d)
    assert registry.close_all() == 1 and not registry.alive(d)


def test_a_state_change_from_another_site_is_refused(app: Flask, mirror: Mirror) -> None:
    client = app.test_client()
    login(client)
    token = _csrf(client)
    form = {"enabled": "false", "csrf_token": token}
    statuses = {}
    for origin in ("http://evil.example", "null", "http://localhost"):
        mirror.control.set_swapping(True)
        response = client.post("/swapping", data=form, headers={"Origin": origin})
        statuses[origin] = (response.status_code, mirror.control.swapping_enabled)
    assert statuses == {
        "http://evil.example": (400, True),  # refused: swapping still on
        "null": (302, False),  # a browser under our no-referrer policy
        "http://localhost": (302, False),  # our own page
    }
