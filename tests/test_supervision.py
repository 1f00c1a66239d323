"""Running under systemd: READY after the first frame, WATCHDOG while frames flow, SIGTERM.

systemd's notify socket is played by a datagram socket bound in the test and
named in ``NOTIFY_SOCKET``. The mirror runs as ``mirror run`` in a subprocess
(READY, heartbeats, SIGTERM to exit 0 within 3 s) and in-process with a
processing stage that hangs on an event (the heartbeat stops, then resumes).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from appliance.config import Settings
from appliance.inference.runtime import choose_for_device
from appliance.media.demo_source import DemoSource
from appliance.media.frames import Frame
from appliance.modelstore import ModelStore
from appliance.session import MirrorSession, SessionOptions
from appliance.supervision.heartbeat import STALL_S, Heartbeat
from appliance.supervision.notify import Notifier, socket_address

MIRROR = [sys.executable, "-m", "appliance.cli.main"]
SIGTERM_LIMIT_S = 3.0  # the requirement: SIGTERM to exit within 3 s


class FakeSystemd:
    """A bound datagram socket standing in for systemd's notify socket."""

    def __init__(self, address: str | bytes) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(address)
        self.messages: list[tuple[float, str]] = []

    def receive(self, timeout_s: float) -> list[str]:
        """Every message that arrives within ``timeout_s`` (also kept in ``messages``)."""
        got = []
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                break
            got.append(data.decode())
            self.messages.append((time.monotonic(), data.decode()))
        return got

    def wait_for(self, message: str, timeout_s: float) -> bool:
        """True once ``message`` arrives within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(4096).decode()
            except TimeoutError:
                return False
            self.messages.append((time.monotonic(), data))
            if data == message:
                return True
        return False


@pytest.fixture
def systemd(tmp_path: Path) -> Iterator[tuple[FakeSystemd, str]]:
    path = tmp_path / "notify.sock"
    fake = FakeSystemd(str(path))
    try:
        yield fake, str(path)
    finally:
        fake.sock.close()


# ---- the client --------------------------------------------------------------------------


def test_without_a_notify_socket_every_message_is_a_no_op() -> None:
    notifier = Notifier({})
    assert not notifier.enabled
    assert not notifier.ready() and not notifier.watchdog() and not notifier.stopping()
    assert notifier.watchdog_interval() == 5.0


def test_an_abstract_socket_name_gets_a_leading_nul() -> None:
    name = f"mirror-test-{os.getpid()}"
    assert socket_address("@" + name) == b"\0" + name.encode()
    fake = FakeSystemd(b"\0" + name.encode())
    try:
        notifier = Notifier({"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "3000000"})
        assert notifier.ready() and notifier.status("12.0 fps\nthermal normal")
        assert fake.receive(0.5) == ["READY=1", "STATUS=12.0 fps thermal normal"]
        assert notifier.watchdog_interval() == 1.5
    finally:
        fake.sock.close()


def test_a_missing_socket_is_logged_not_raised(tmp_path: Path) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone.sock")})
    assert notifier.enabled and not notifier.ready()


def test_the_heartbeat_follows_the_display_count(systemd: tuple[FakeSystemd, str]) -> None:
    fake, path = systemd
    now = [0.0]
    notifier = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "1000000"})
    heartbeat = Heartbeat(notifier, stall_s=2.0, status=lambda: "ok", clock=lambda: now[0])
    heartbeat.beat(0)
    assert fake.receive(0.1) == []  # nothing shown yet: not ready
    heartbeat.beat(1)
    assert fake.receive(0.1) == ["READY=1", "WATCHDOG=1", "STATUS=ok"]
    for count in range(2, 6):  # frames flow: a heartbeat every 0.5 s
        now[0] += 0.5
        heartbeat.beat(count)
    assert fake.receive(0.1) == ["WATCHDOG=1"] * 4
    for _ in range(8):  # the count stops at 5: heartbeats end after 2 s
        now[0] += 0.5
        heartbeat.beat(5)
    assert fake.receive(0.1) == ["WATCHDOG=1"] * 4
    now[0] += 0.5
    heartbeat.beat(6)  # flowing again
    heartbeat.stop()
    assert fake.receive(0.1) == ["WATCHDOG=1", "STOPPING=1"]


# ---- the running mirror ------------------------------------------------------------------


def test_mirror_run_is_ready_heartbeats_and_exits_0_on_sigterm_within_3_s(
    systemd: tuple[FakeSystemd, str],
) -> None:
    fake, path = systemd
    env = {**os.environ, "NOTIFY_SOCKET": path, "WATCHDOG_USEC": "1000000"}
    proc = subprocess.Popen(
        [*MIRROR, "run", "--no-preview", "--no-web", "--status-every", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert fake.wait_for("READY=1", 120.0), fake.messages
        beats = [m for m in fake.receive(2.2) if m == "WATCHDOG=1"]
        assert len(beats) >= 3, fake.messages  # every 0.5 s while frames flow
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        exit_s = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
    print(f"SIGTERM to exit: {exit_s:.2f} s")
    assert proc.returncode == 0, err
    assert exit_s < SIGTERM_LIMIT_S, f"exited {exit_s:.2f} s after SIGTERM"
    assert "ended: stop requested" in out, out
    assert "STOPPING=1" in fake.receive(0.5)


def _session(store: ModelStore, astronaut: np.ndarray) -> MirrorSession:
    choice = choose_for_device(store, override="x86-cpu")
    source = DemoSource(astronaut, size=(320, 240), paced=True, fps=20.0)
    options = SessionOptions(identity="grace_hopper")
    return MirrorSession(Settings(), store, choice, source, options)


def _tick_for(session: MirrorSession, seconds: float) -> None:
    """Tick as ``mirror run`` does, every 0.2 s, for ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        session.tick()
        time.sleep(0.2)


def test_a_hung_pipeline_stops_the_heartbeat(
    systemd: tuple[FakeSystemd, str],
    monkeypatch: pytest.MonkeyPatch,
    store: ModelStore,
    astronaut: np.ndarray,
) -> None:
    fake, path = systemd
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    monkeypatch.setenv("WATCHDOG_USEC", "400000")  # a heartbeat every 0.2 s
    session = _session(store, astronaut)
    hang, release = threading.Event(), threading.Event()
    process = session.processor.process

    def hanging(frame: Frame) -> Frame:  # a stage that hangs once ``hang`` is set
        if hang.is_set():
            release.wait(60.0)
        return process(frame)

    monkeypatch.setattr(session.processor, "process", hanging)
    session.start()
    try:
        deadline = time.monotonic() + 60.0
        while not session.heartbeat.ready and time.monotonic() < deadline:
            _tick_for(session, 0.2)
        _tick_for(session, 1.5)
        flowing = fake.receive(0.1)
        assert flowing[0] == "READY=1" and flowing.count("WATCHDOG=1") >= 4, flowing

        hang.set()
        _tick_for(session, STALL_S + 1.0)  # heartbeats may go on until the stall limit
        fake.receive(0.1)
        _tick_for(session, 2.0)
        assert "WATCHDOG=1" not in fake.receive(0.1)  # hung: systemd would restart us

        release.set()
        hang.clear()
        _tick_for(session, 1.0)
        assert "WATCHDOG=1" in fake.receive(0.1)  # frames flow again
    finally:
        release.set()
        session.stop()
    assert "STOPPING=1" in fake.receive(0.5)


def test_stopping_a_hung_pipeline_still_ends_within_3_s(
    monkeypatch: pytest.MonkeyPatch, store: ModelStore, astronaut: np.ndarray
) -> None:
    session = _session(store, astronaut)
    release = threading.Event()

    def hung(frame: Frame) -> Frame:
        release.wait(60.0)
        return frame

    monkeypatch.setattr(session.processor, "process", hung)
    session.start()
    try:
        time.sleep(0.5)  # the processing thread is now stuck in ``hung``
        started = time.monotonic()
        session.stop()
        stop_s = time.monotonic() - started
    finally:
        release.set()
    print(f"stop with a hung stage: {stop_s:.2f} s")
    assert stop_s < SIGTERM_LIMIT_S, f"stop took {stop_s:.2f} s"
