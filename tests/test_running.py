"""One lifecycle (appliance.running.Lifecycle) under every part that runs or holds resources.

The parts are real: the pipeline runner, the thermal governor with a sensor
whose read can be held, the GPIO panel on gpiozero's MockFactory, the admin
UI's waitress server answering real HTTP requests.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from flask import Flask
from gpiozero.pins.mock import MockFactory

from appliance.config import Settings
from appliance.device.profile import GpioSpec
from appliance.errors import SourceError
from appliance.gpio.panel import GpioCallbacks, GpioPanel
from appliance.media.preview_server import PreviewServer
from appliance.media.sink_base import FrameSink
from appliance.media.source_base import FrameSource
from appliance.pipeline.runner import PipelineRunner
from appliance.running import Lifecycle
from appliance.thermal.governor import GovernorConfig
from appliance.thermal.runner import ThermalGovernor
from appliance.thermal.sensors import Reading
from web_ui.server import WebServer

CONFIG = GovernorConfig(warm_c=65, hot_c=75, critical_c=82, hysteresis_c=5, hold_s=30)


class Hooks(Lifecycle):
    """Counts its hook calls; ``fail`` makes the next start fail."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.fail = False

    def _on_start(self) -> None:
        self.calls.append("start")
        if self.fail:
            raise SourceError("cannot start")

    def _on_stop(self) -> None:
        self.calls.append("stop")

    def _join(self, timeout_s: float) -> bool:
        self.calls.append(f"join {timeout_s}")
        return True

    def _on_close(self) -> None:
        self.calls.append("close")


class OneShot(Hooks):
    restartable = False


class HeldSensor:
    """A thermal sensor whose ``read`` waits while ``held`` is clear."""

    name = "held"

    def __init__(self) -> None:
        self.held = threading.Event()
        self.held.set()
        self.reading = threading.Event()
        self.closed = 0

    def read(self) -> list[Reading]:
        self.reading.set()
        self.held.wait(10.0)
        return [Reading("held", "held", "ok", 50.0)]

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def factory() -> Iterator[MockFactory]:
    mock = MockFactory()
    yield mock
    mock.close()


def test_every_part_that_runs_shares_the_one_lifecycle() -> None:
    for part in (
        PipelineRunner,
        ThermalGovernor,
        GpioPanel,
        WebServer,
        FrameSource,
        FrameSink,
        PreviewServer,
    ):
        assert issubclass(part, Lifecycle), part
    assert not PipelineRunner.restartable and not ThermalGovernor.restartable
    assert WebServer.restartable and FrameSource.restartable


def test_a_restartable_part_starts_again_after_stop() -> None:
    part = Hooks()
    with part:
        part.start()  # already started: nothing
        assert (part.started, part.closed) == (True, False)
        assert part.stop(0.5)
        part.start()
    assert (part.started, part.closed) == (False, True)
    assert part.calls == [
        "start",
        "stop",
        "join 0.5",
        "start",
        "stop",
        f"join {Lifecycle.stop_timeout_s}",
        "close",
    ]
    part.close()  # idempotent
    assert part.stop()  # on a closed part: joins again, nothing else
    assert part.calls[-2:] == ["close", f"join {Lifecycle.stop_timeout_s}"]
    with pytest.raises(RuntimeError, match="closed"):
        part.start()


def test_a_one_shot_runs_once_and_stop_closes_it() -> None:
    part = OneShot()
    part.start()
    with pytest.raises(RuntimeError, match="runs once; build a new OneShot"):
        part.start()  # even while started
    assert part.stop()
    assert part.closed
    assert part.calls == ["start", "stop", "join 2.0", "close"]
    with pytest.raises(RuntimeError, match="runs once"):
        part.start()


def test_a_one_shot_whose_start_failed_cannot_start_again() -> None:
    part = OneShot()
    part.fail = True
    with pytest.raises(SourceError):
        part.start()
    assert not part.started
    part.fail = False
    with pytest.raises(RuntimeError, match="runs once"):
        part.start()
    part.close()
    assert part.calls == ["start", "join 2.0", "close"]  # never stopped: it never started


def test_the_governor_stop_says_whether_its_thread_ended_and_closes_it() -> None:
    sensor = HeldSensor()
    governor = ThermalGovernor([sensor], CONFIG, Settings(), poll_s=0.01)
    governor.start()
    with pytest.raises(RuntimeError, match="runs once"):
        governor.start()
    assert sensor.reading.wait(5.0)
    sensor.held.clear()
    sensor.reading.clear()
    assert sensor.reading.wait(5.0)  # now inside a held read
    assert not governor.stop(timeout_s=0.1)
    assert governor.closed and sensor.closed == 1
    sensor.held.set()
    assert governor.stop(timeout_s=5.0)  # a second stop waits for the thread again
    assert sensor.closed == 1  # closed once


def test_a_governor_never_started_is_closed_by_stop() -> None:
    sensor = HeldSensor()
    governor = ThermalGovernor([sensor], CONFIG, Settings())
    assert governor.stop()
    assert governor.closed and sensor.closed == 1
    with pytest.raises(RuntimeError, match="closed"):
        governor.start()


def test_the_gpio_panel_closes_once_like_gpiozero_devices(factory: MockFactory) -> None:
    spec = GpioSpec(numbering="bcm", pins={"status_led": 17, "button": 27})
    with GpioPanel.open(spec, GpioCallbacks(), pin_factory=factory) as panel:
        assert (panel.active, panel.closed) == (True, False)
    assert (panel.active, panel.closed) == (False, True)
    panel.close()  # idempotent
    assert factory.pin(17).function == "input"  # the LED let its pin go
    with pytest.raises(RuntimeError, match="closed"):
        panel.start()


def _answers(url: str) -> bool:
    """Whether an HTTP server answers at ``url`` (any status)."""
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def test_the_web_server_restarts_and_says_when_it_stopped(app: Flask) -> None:
    server = WebServer(app, "127.0.0.1", 0)
    with server:
        url = f"{server.url}healthz"
        assert _answers(url)
        assert server.stop()
        assert not _answers(url)
        server.start()  # restartable: the same server serves again
        assert _answers(f"{server.url}healthz")
    assert (server.started, server.closed) == (False, True)
    assert not _answers(f"{server.url}healthz")
