"""Login and password-form lock-out: per client address (and IPv6 /64), with a slow-down."""

from __future__ import annotations

import threading
from pathlib import Path

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
from web_ui.client_keys import client_of
from web_ui.ratelimit import LoginLimiter
from web_ui.slowdown import GlobalSlowdown
from web_ui.trusted_clients import TrustedClients


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


def test_an_ipv6_host_counts_by_its_address_and_its_64_by_a_larger_budget(app: Flask) -> None:
    lan = "2001:db8:1:2::"
    for _ in range(5):
        response = login(_from(app, f"{lan}66"), "guess")
    assert response.status_code == 429  # that host is locked out...
    assert login(_from(app, f"{lan}20"), PASSWORD).status_code == 302  # ...not its /64 (the LAN)
    for host in range(0x100, 0x10F):  # one host taking new addresses in its /64: 20 failures
        assert login(_from(app, f"{lan}{host:x}"), "guess").status_code in (401, 429)
    assert login(_from(app, f"{lan}99"), PASSWORD).status_code == 429  # now the /64 is locked
    assert login(_from(app, f"{lan}20"), PASSWORD).status_code == 302  # but not who logged in
    assert login(_from(app, "2001:db8:1:3::1"), PASSWORD).status_code == 302
    assert client_of("::ffff:10.0.0.1") == ("10.0.0.1", "10.0.0.1")
    assert client_of(f"{lan}5") == (f"{lan}5", "2001:db8:1:2::/64")
    assert client_of("fe80::1%eth0") == ("fe80::1", "fe80::/64") and client_of(None)[0] == "?"


def test_a_spray_from_many_addresses_is_slowed_down_beyond_each_address_share(
    app: Flask, clock: FakeClock
) -> None:
    """Each address has 2 checks a minute of its own; beyond them all share 30 a minute."""
    admin = _from(app, "10.1.0.1")
    assert login(admin, PASSWORD).status_code == 302  # the admin's address is now trusted
    post(admin, "/logout")
    for guess in range(60):  # 15 addresses, 4 guesses each: their 30 own checks and the 30 shared
        assert login(_from(app, f"10.2.0.{guess // 4}"), "guess").status_code == 401
    clock.now += 20
    response = login(_from(app, "10.2.0.1"), PASSWORD)  # even the right password: slowed
    assert response.status_code == 429
    assert "Too many attempts; try again in 40 s." in response.text
    assert response.headers["Retry-After"] == "40"
    assert login(_from(app, "10.3.0.1"), PASSWORD).status_code == 302  # a new address: its own
    assert login(admin, PASSWORD).status_code == 302  # a trusted address is not slowed
    clock.now += 40  # the window has room again
    assert login(_from(app, "10.2.0.1"), PASSWORD).status_code == 302


def test_the_slow_down_is_bounded() -> None:
    clock = FakeClock()
    slowdown = GlobalSlowdown(max_checks=3, window_s=10, share=1, max_addresses=2, clock=clock)
    assert [slowdown.take("a1") for _ in range(5)] == [0, 0, 0, 0, 10]  # its own, then the pool
    assert slowdown.take("a2") == 0  # its own share: the full pool does not matter
    assert slowdown.take("a3") == 10  # two addresses hold a share: a third has only the pool
    clock.now += 4
    assert slowdown.take("a3") == 6
    clock.now += 6  # every check has left the window: the shares are forgotten
    assert slowdown.take("a3") == 0 and slowdown.take("a4") == 0
    assert slowdown.take("a5") == 0 and slowdown.take("a5") == 0  # a1's share, then the pool


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


def test_the_trusted_addresses_are_bounded_expire_and_survive_a_bad_file(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "web" / "trusted_clients.json"
    trusted = TrustedClients(path, trust_s=100, max_clients=2, clock=clock)
    for address in ("10.0.0.1", "10.0.0.2", "10.0.0.3"):
        trusted.trust(address)
    again = TrustedClients(path, trust_s=100, max_clients=2, clock=clock)
    assert [a in again for a in ("10.0.0.1", "10.0.0.2", "10.0.0.3")] == [False, True, True]
    clock.now += 100
    assert "10.0.0.2" not in TrustedClients(path, trust_s=100, clock=clock)  # expired
    path.write_text("{not json", encoding="utf-8")
    assert len(TrustedClients(path, clock=clock)) == 0  # logged, and an empty list
