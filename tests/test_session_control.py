"""The control core under ``mirror run --no-web``: GPIO button and the saved identity.

The session is built exactly as ``mirror run --no-web`` builds it (no web
starter), on the Raspberry Pi 4 profile's pins, with gpiozero's MockFactory
standing in for the header: the test drives the button's pin as a press would.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
from gpiozero import Device
from gpiozero.pins.mock import MockFactory

from appliance.config import Settings
from appliance.control.identities import IdentityLibrary
from appliance.inference.runtime import choose_for_device
from appliance.media.demo_source import DemoSource
from appliance.media.display_screens import FirstBootScreen
from appliance.media.overlays import Overlays
from appliance.modelstore import ModelStore
from appliance.paths import DATA_DIR_ENV, data_dir, model_cache_dir, web_dir
from appliance.session import MirrorSession, SessionOptions
from tests.test_display_screens import Recorder
from tests.waiting import wait_for

BUTTON = "GPIO27"  # rpi4-cpu.yaml: button: 27


@pytest.fixture
def own_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data folder of this test's own (identities, state.json), sharing the models."""
    (tmp_path / "models").symlink_to(model_cache_dir(data_dir()), target_is_directory=True)
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    return tmp_path


@pytest.fixture
def mock_pins(monkeypatch: pytest.MonkeyPatch) -> Iterator[MockFactory]:
    mock = MockFactory()
    monkeypatch.setattr(Device, "pin_factory", mock)
    yield mock
    mock.close()


def add_identity(base: Path, name: str, image: np.ndarray) -> None:
    ok, jpeg = cv2.imencode(".jpg", image)
    assert ok
    IdentityLibrary(base / "identities").add(name, jpeg.tobytes(), None)


def no_web_session(store: ModelStore, astronaut: np.ndarray) -> MirrorSession:
    choice = choose_for_device(store, override="rpi4-cpu")
    source = DemoSource(astronaut, size=(320, 240), paced=True, fps=15.0, frames=None)
    options = SessionOptions(identity="grace_hopper", web=None)  # what --no-web passes
    return MirrorSession(Settings(), store, choice, source, options)


def press(factory: MockFactory, hold_s: float) -> None:
    pin = factory.pin(BUTTON)
    pin.drive_low()  # pressed: the button pulls the pin to ground
    time.sleep(hold_s)
    pin.drive_high()


def saved_state(base: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((web_dir(base) / "state.json").read_text())
    return data


def test_no_web_restores_the_saved_identity_and_the_button_drives_the_control(
    own_data: Path,
    mock_pins: MockFactory,
    store: ModelStore,
    astronaut: np.ndarray,
    grace_hopper: np.ndarray,
) -> None:
    add_identity(own_data, "Admiral", grace_hopper)
    add_identity(own_data, "Astronaut", astronaut)
    web_dir(own_data).mkdir(parents=True, exist_ok=True)
    (web_dir(own_data) / "state.json").write_text(
        json.dumps({"active": "Astronaut", "swapping": True})
    )
    assert os.environ[DATA_DIR_ENV] == str(own_data)

    session = no_web_session(store, astronaut)
    # restored at start, before a frame: the saved identity is the one swapped in
    assert session.control.active_identity() == "Astronaut"
    assert session.processor.identity is not None
    assert session.processor.identity.name == "Astronaut"
    session.start()
    try:
        assert session.panel is not None and session.panel.button is not None
        press(mock_pins, 0.1)  # short press: the next identity (after the last: the first)
        assert wait_for(lambda: session.control.active_identity() == "Admiral", 10.0)
        assert wait_for(lambda: saved_state(own_data)["active"] == "Admiral", 5.0)
        press(mock_pins, 0.1)
        assert wait_for(lambda: session.control.active_identity() == "Astronaut", 10.0)

        hold = session.profile.gpio.button_hold_s if session.profile.gpio else 2.0
        press(mock_pins, hold + 0.3)  # long press: swapping off
        assert wait_for(lambda: not session.control.swapping_enabled, 10.0)
        assert session.processor.identity is None
        assert saved_state(own_data) == {"active": "Astronaut", "swapping": False}
        press(mock_pins, hold + 0.3)  # and back on, with the same identity
        assert wait_for(lambda: session.control.swapping_enabled, 10.0)
        assert session.processor.identity is not None
        assert session.processor.identity.name == "Astronaut"
    finally:
        session.stop()


def test_pir_idling_drops_frames_as_no_motion_not_thermal(
    store: ModelStore, astronaut: np.ndarray
) -> None:
    choice = choose_for_device(store, override="x86-cpu")
    source = DemoSource(astronaut, size=(320, 240), paced=True, fps=30.0, frames=45)
    session = MirrorSession(Settings(), store, choice, source, SessionOptions())
    session._motion(False)  # the PIR callback after its idle time without motion
    session.start()
    try:
        assert session.runner.wait(30.0)
    finally:
        session.stop()
    drops = session.telemetry.snapshot().drops
    assert drops.get("no_motion", 0) > 0, drops
    assert drops.get("thermal", 0) == 0, drops


def test_pir_idling_shows_the_idle_screen_without_the_main_thread(
    store: ModelStore, tmp_path: Path
) -> None:
    """The frames carry "nobody there" to the display; no main-thread tick sets it."""
    choice = choose_for_device(store, override="x86-cpu")
    room = np.full((240, 320, 3), 120, np.uint8)
    source = DemoSource(room, size=(320, 240), paced=True, fps=30.0, frames=20)
    screen = Recorder()
    overlays = Overlays(store.path("label_font"))
    display = FirstBootScreen(screen, overlays, tmp_path / "no-notice.txt", 8000)
    options = SessionOptions(display=display, overlays=overlays)
    session = MirrorSession(Settings(), store, choice, source, options)
    session._motion(False)  # the PIR callback after its idle time without motion
    session.start()
    try:
        assert session.runner.wait(30.0)
    finally:
        session.stop()
    assert screen.images, "nothing shown"
    idle = overlays.idle_screen((320, 240))
    assert all(np.array_equal(image, idle) for image in screen.images)
