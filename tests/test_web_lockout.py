"""Login and password-form lock-out: per (account, client address), with a global slow-down."""

from __future__ import annotations

import threading

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.test_web_support import (
    PASSWORD,
    FakeClock,
    Mirror,
    build_app,
    login,
    page_token,
    post,
)
from web_ui.ratelimit import LoginLimiter, client_key
from web_ui.slowdown import GlobalSlowdown


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def app(mirror: Mirror, clock: FakeClock) -> Flask:
    return build_app(mirror, limiter=LoginLimiter(clock=clock))


def _from(app: Flask, address: str) -> FlaskClient:
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return client


def test_wrong_passwords_from_one_address_do_not_lock_out_another(app: Flask) -> None:
    stranger = _from(app, "192.168.1.66")
    for _ in range(5):
        response = login(stranger, "guess")
    assert response.status_code == 429 and response.headers["Retry-After"] == "60"
    assert login(stranger, PASSWORD).status_code == 429  # the stranger's address is locked
    admin = _from(app, "192.168.1.20")
    response = login(admin, PASSWORD)
    assert response.status_code == 302 and response.location == "/"
    assert admin.get("/").status_code == 200
    assert login(stranger, PASSWORD).status_code == 429  # and stays locked


def test_an_ipv6_host_counts_as_its_64(app: Flask) -> None:
    for host in range(1, 6):
        login(_from(app, f"2001:db8:1:2::{host}"), "guess")
    assert login(_from(app, "2001:db8:1:2::99"), PASSWORD).status_code == 429
    assert login(_from(app, "2001:db8:1:3::1"), PASSWORD).status_code == 302
    assert client_key("::ffff:10.0.0.1") == "10.0.0.1" and client_key(None) == "?"


def test_a_spray_from_many_addresses_is_slowed_down_for_new_addresses(
    app: Flask, clock: FakeClock
) -> None:
    """At most 30 password checks per 60 s from addresses that never logged in, in all."""
    admin = _from(app, "10.1.0.1")
    assert login(admin, PASSWORD).status_code == 302  # the admin's address is now trusted
    post(admin, "/logout")
    for guess in range(29):  # the admin's first login took a place; 3 guesses an address
        assert login(_from(app, f"10.2.0.{guess // 3}"), "guess").status_code == 401
    clock.now += 20
    response = login(_from(app, "10.3.0.1"), PASSWORD)  # even the right password: slowed
    assert response.status_code == 429
    assert "Too many attempts; try again in 40 s." in response.text
    assert response.headers["Retry-After"] == "40"
    assert login(admin, PASSWORD).status_code == 302  # a trusted address is not slowed
    clock.now += 40  # the window has room again
    assert login(_from(app, "10.3.0.1"), PASSWORD).status_code == 302


def test_the_global_slow_down_is_bounded() -> None:
    clock = FakeClock()
    slowdown = GlobalSlowdown(max_checks=3, window_s=10, max_trusted=2, clock=clock)
    assert [slowdown.take(f"a{i}") for i in range(4)] == [0, 0, 0, 10]
    clock.now += 4
    assert slowdown.take("a9") == 6
    for name in ("t1", "t2", "t3"):
        slowdown.trust(name)
    assert slowdown.take("t3") == 0 and slowdown.take("t1") == 6  # t1 forgotten: at most 2
    clock.now += 6
    assert slowdown.take("a9") == 0


def test_the_password_form_locks_after_repeated_wrong_current_passwords(
    app: Flask, clock: FakeClock
) -> None:
    client = _from(app, "10.0.0.5")
    login(client)
    new = "another password"
    for _ in range(4):
        response = post(client, "/password", {"current": "guess", "new": new, "confirm": new})
        assert response.status_code == 400 and "current password is wrong" in response.text
    response = post(client, "/password", {"current": "guess", "new": new, "confirm": new})
    assert response.status_code == 429 and response.headers["Retry-After"] == "60"
    assert "Too many attempts; try again in 60 s." in response.text
    response = post(client, "/password", {"current": PASSWORD, "new": new, "confirm": new})
    assert response.status_code == 429  # locked: even the right one is not checked
    assert login(_from(app, "10.0.0.5"), PASSWORD).status_code == 429  # one budget with login
    clock.now += 61
    response = post(client, "/password", {"current": PASSWORD, "new": new, "confirm": new})
    assert response.status_code == 302 and response.location == "/"


def test_a_bad_new_password_is_not_counted_as_a_guess(app: Flask) -> None:
    client = _from(app, "10.0.0.6")
    login(client)
    form = {"current": PASSWORD, "new": "short", "confirm": "short"}
    for _ in range(6):
        response = post(client, "/password", form)
        assert response.status_code == 400 and "at least 10 characters" in response.text


def test_concurrent_guesses_cannot_pass_the_count_together(
    mirror: Mirror, caplog: pytest.LogCaptureFixture
) -> None:
    """The check and the count are one step: 8 guesses at once from one address, 5 checked."""
    app = build_app(mirror, limiter=LoginLimiter(clock=FakeClock()))
    barrier = threading.Barrier(8)
    statuses: list[int] = []

    def guess() -> None:
        client = _from(app, "10.9.9.9")
        token = page_token(client)
        barrier.wait()
        form = {"username": "admin", "password": "guess", "csrf_token": token}
        statuses.append(client.post("/login", data=form).status_code)

    threads = [threading.Thread(target=guess) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    checked = [r for r in caplog.records if r.getMessage().startswith("failed admin login")]
    assert len(statuses) == 8 and set(statuses) <= {401, 429} and 429 in statuses
    assert len(checked) == 5  # the password was compared 5 times, not 8
