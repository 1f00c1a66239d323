"""Nobody on the LAN can lock staff out of the admin page: real HTTP to a real waitress server.

Each ``Visitor`` connects from its own loopback address (127.0.0.x); the limiter runs
on a ``FakeClock`` so a minute of spraying takes no minute. The IPv6 /64 case runs in
a network namespace of its own (``unshare -rn``) where one /64 is on the loopback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.login_visitor import Visitor
from tests.test_web_support import FakeClock, Mirror, build_app
from web_ui.app import TRUSTED_NAME
from web_ui.context import web_context
from web_ui.ratelimit import LoginLimiter
from web_ui.server import WebServer, serve
from web_ui.trusted_clients import TrustedClients

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def server(mirror: Mirror, clock: FakeClock) -> Iterator[WebServer]:
    started = serve(build_app(mirror, limiter=LoginLimiter(clock=clock)), "127.0.0.1", 0)
    yield started
    started.stop()


def test_one_address_rotating_user_names_locks_out_only_itself(server: WebServer) -> None:
    sprayer = Visitor(server, "127.0.0.2")
    statuses = [sprayer.login("guess", username=f"user{n}") for n in range(31)]
    assert statuses[:4] == [401] * 4 and set(statuses[4:]) == {429}  # per address, any name
    assert sprayer.login() == 429  # locked: even the right password is not checked
    assert Visitor(server, "127.0.0.3").login() == 302  # never logged in here before


def test_a_slow_spray_from_one_address_never_keeps_a_new_address_out(
    server: WebServer, clock: FakeClock
) -> None:
    """One wrong try every 2 s for 5 minutes, a new name each time; now and then a member of
    staff on a device that never logged in here types the right password."""
    sprayer = Visitor(server, "127.0.0.2")
    staff: list[int] = []
    for n in range(150):
        sprayer.login("guess", username=f"user{n}")
        clock.now += 1
        if n % 15 == 14:  # between two tries
            staff.append(Visitor(server, f"127.0.1.{n}").login())
        clock.now += 1
    assert staff == [302] * 10


def test_a_spray_from_many_addresses_is_bounded_yet_leaves_a_new_address_its_share(
    server: WebServer,
) -> None:
    """20 addresses, 4 wrong guesses each at once: each has 2 checks of its own, then all
    share 30; the right password from a new address is still checked."""
    sprayers = [Visitor(server, f"127.0.2.{n}") for n in range(1, 21)]
    statuses = [s.login("guess") for _ in range(4) for s in sprayers]
    assert statuses.count(401) == 20 * 2 + 30 and statuses.count(429) == 10
    assert sprayers[0].login() == 429  # its share and the pool are used up: bounded
    assert Visitor(server, "127.0.3.1").login() == 302


def test_addresses_that_logged_in_stay_trusted_across_a_restart(
    mirror: Mirror, clock: FakeClock
) -> None:
    def start() -> WebServer:
        trusted = TrustedClients(mirror.web_dir / TRUSTED_NAME)
        return serve(build_app(mirror, limiter=LoginLimiter(clock=clock, trusted=trusted)),
                     "127.0.0.1", 0)  # fmt: skip

    first = start()
    try:
        assert Visitor(first, "127.0.0.5").login() == 302
    finally:
        first.stop()
    server = start()  # a restart: a new app and limiter over the same data folder
    try:
        for sprayer in [Visitor(server, f"127.0.2.{n}") for n in range(1, 16)]:
            for _ in range(4):  # 15 x 4: their own shares and the whole pool
                assert sprayer.login("guess") == 401
        staff, stranger = Visitor(server, "127.0.0.5"), Visitor(server, "127.0.0.6")
        for visitor in (staff, stranger):
            assert [visitor.login("typo") for _ in range(2)] == [401, 401]
        assert stranger.login() == 429  # its share used, the pool full
        assert staff.login() == 302  # trusted: only its own lock-out applies
    finally:
        server.stop()
    saved = json.loads((mirror.web_dir / TRUSTED_NAME).read_text(encoding="utf-8"))
    assert list(saved["until_unix"]) == ["127.0.0.5"]
    assert (mirror.web_dir / TRUSTED_NAME).stat().st_mode & 0o777 == 0o600
    default = build_app(mirror)  # as ``mirror run`` builds it: the same file
    assert "127.0.0.5" in web_context(default).limiter.trusted


def _can_unshare() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_unshare(), reason="no network namespaces here (unshare -rn)")
def test_an_ipv6_host_locks_out_only_itself_not_its_64(tmp_path: Path) -> None:
    """5 wrong passwords from one host of a /64 (the whole LAN on IPv6): the host is locked
    out, another host of the /64 logs in."""
    proc = subprocess.run(
        ["unshare", "-rn", sys.executable, "-m", "tests.ipv6_lockout_probe", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {
        "wrong": [401, 401, 401, 401, 429],
        "same_host_right": 429,
        "other_host_right": 302,
    }


def test_ipv6_loopback_is_locked_by_its_own_address(
    mirror: Mirror, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Where no namespace can be made: over ::1, the lock-out names the address, not a /64."""
    server = serve(build_app(mirror, limiter=LoginLimiter(clock=clock)), "::1", 0)
    try:
        host = Visitor(server, "::1")
        assert [host.login("guess") for _ in range(5)] == [401] * 4 + [429]
    finally:
        server.stop()
    locks = [r.getMessage() for r in caplog.records if " locked for " in r.getMessage()]
    assert locks == ["logins from address ::1 locked for 60 s after 5 wrong passwords"]
