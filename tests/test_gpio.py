"""GPIO on gpiozero's MockFactory: LED patterns, button presses, PIR wake and idle, timings.

MockFactory is gpiozero's own simulating backend: the tests drive input pins
(``drive_low``/``drive_high``) and read each output pin's recorded
``states``, ``(seconds since the previous change, new state)``.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import sys
import threading
import time
import warnings
from collections.abc import Iterator

import pytest
from gpiozero import LED, Device
from gpiozero.exc import PinFactoryFallback
from gpiozero.pins.mock import MockFactory, MockPin

from appliance.device.catalog import load_profiles
from appliance.device.profile import GpioSpec
from appliance.gpio import pin_factory
from appliance.gpio.panel import GpioCallbacks, GpioPanel, resolve_pin_factory
from appliance.gpio.pin_factory import choose_pin_factory
from appliance.gpio.status_led import FAST_BLINK, PATTERNS, SLOW_BLINK, StatusLed
from appliance.thermal.fan import open_fan
from tests.waiting import wait_for

IDLE_S = 0.3
HOLD_S = 0.3


@pytest.fixture
def factory() -> Iterator[MockFactory]:
    mock = MockFactory()
    yield mock
    mock.close()


class Recorder:
    """The panel's callbacks, each recording when it ran."""

    def __init__(self) -> None:
        self.calls: dict[str, list[float]] = {
            "next_identity": [],
            "toggle_swapping": [],
            "wake": [],
            "idle": [],
        }
        self.lock = threading.Lock()

    def _note(self, name: str) -> None:
        with self.lock:
            self.calls[name].append(time.monotonic())

    def callbacks(self) -> GpioCallbacks:
        return GpioCallbacks(
            next_identity=lambda: self._note("next_identity"),
            toggle_swapping=lambda: self._note("toggle_swapping"),
            wake=lambda: self._note("wake"),
            idle=lambda: self._note("idle"),
        )

    def count(self, name: str) -> int:
        with self.lock:
            return len(self.calls[name])


def spec(**pins: int) -> GpioSpec:
    return GpioSpec(
        numbering="bcm",
        pins=pins or {"status_led": 17, "button": 27, "pir": 22, "fan": 18},
        button_hold_s=HOLD_S,
        motion_idle_s=IDLE_S,
    )


def close_to(actual: float, expected: float) -> bool:
    return math.isclose(actual, expected, rel_tol=0.25, abs_tol=0.06)


# ---------------------------------------------------------------- status LED


def blink_periods(pin: MockPin) -> tuple[list[float], list[float]]:
    """(how long each full on lasted, how long each full off lasted) from the pin's history."""
    changes = pin.states[2:]  # [0] is the initial off, [1] the first switch on
    on_s = [delta for delta, state in changes if not state]
    off_s = [delta for delta, state in changes if state]
    return on_s, off_s


def test_led_pattern_per_state_with_timings(factory: MockFactory) -> None:
    pins = dict(zip(PATTERNS, (5, 6, 13, 19, 26), strict=True))
    leds = {state: StatusLed(f"GPIO{pin}", pin_factory=factory) for state, pin in pins.items()}
    try:
        for state, led in leds.items():
            led.show(state)
        time.sleep(2.6)  # more than one slow period (2 s) and many fast ones (0.4 s)
        for state, pin_number in pins.items():
            pin = factory.pin(f"GPIO{pin_number}")
            pattern = PATTERNS[state]
            if pattern is None:
                assert [s for _, s in pin.states] == [False, True], state  # steady on
                continue
            on_s, off_s = blink_periods(pin)
            assert on_s and off_s, (state, pin.states)
            assert all(close_to(t, pattern.on_s) for t in on_s), (state, on_s)
            assert all(close_to(t, pattern.off_s) for t in off_s), (state, off_s)
    finally:
        for led in leds.values():
            led.close()
    assert (SLOW_BLINK.on_s, SLOW_BLINK.off_s, FAST_BLINK.on_s, FAST_BLINK.off_s) == (
        1.0,
        1.0,
        0.2,
        0.2,
    )
    assert PATTERNS["degraded"] is PATTERNS["hot"] is SLOW_BLINK
    assert PATTERNS["error"] is PATTERNS["critical"] is FAST_BLINK


def test_led_repeats_do_not_restart_and_steady_stops_the_blink(factory: MockFactory) -> None:
    led = StatusLed("GPIO17", pin_factory=factory)
    pin = factory.pin("GPIO17")
    try:
        led.show("error")
        time.sleep(0.3)
        led.show("error")  # every tick may say the same: the blink goes on undisturbed
        time.sleep(0.4)
        on_s, off_s = blink_periods(pin)
        assert all(close_to(t, FAST_BLINK.on_s) for t in on_s + off_s), pin.states
        led.show("running")
        assert pin.state and led.state == "running"
        changes = len(pin.states)
        time.sleep(0.5)
        assert len(pin.states) == changes  # steady: no more changes
        with pytest.raises(ValueError, match="LED state must be one of running"):
            led.show("on fire")
    finally:
        led.close()
    led.show("error")  # a late tick after close changes nothing and does not fail
    assert led.state == "running"


# ---------------------------------------------------------------- button


def test_short_press_asks_for_the_next_identity(factory: MockFactory) -> None:
    recorder = Recorder()
    with GpioPanel.open(spec(button=27), recorder.callbacks(), pin_factory=factory) as panel:
        assert panel.button is not None
        pin = factory.pin("GPIO27")
        for _ in range(2):
            pin.drive_low()  # pressed: the button pulls the pin to ground
            time.sleep(0.1)
            pin.drive_high()
            time.sleep(0.05)
        assert wait_for(lambda: recorder.count("next_identity") == 2)
        time.sleep(HOLD_S + 0.2)
        assert recorder.count("toggle_swapping") == 0
        assert recorder.count("next_identity") == 2


def test_long_press_toggles_swapping_after_the_hold_time(factory: MockFactory) -> None:
    recorder = Recorder()
    with GpioPanel.open(spec(button=27), recorder.callbacks(), pin_factory=factory):
        pin = factory.pin("GPIO27")
        pressed = time.monotonic()
        pin.drive_low()
        assert wait_for(lambda: recorder.count("toggle_swapping") == 1)
        held_s = recorder.calls["toggle_swapping"][0] - pressed
        assert HOLD_S - 0.02 <= held_s <= HOLD_S + 0.5, held_s
        time.sleep(HOLD_S + 0.2)  # still held: one toggle, not one per hold_time
        pin.drive_high()
        time.sleep(0.2)
        assert recorder.count("toggle_swapping") == 1
        assert recorder.count("next_identity") == 0  # the release of a long press is no short one


def test_a_failing_callback_is_logged_and_the_button_keeps_working(
    factory: MockFactory, caplog: pytest.LogCaptureFixture
) -> None:
    presses: list[int] = []

    def next_identity() -> None:
        presses.append(1)
        if len(presses) == 1:
            raise RuntimeError("no identities enrolled")

    callbacks = GpioCallbacks(next_identity=next_identity)
    with GpioPanel.open(spec(button=27), callbacks, pin_factory=factory):
        pin = factory.pin("GPIO27")
        for _ in range(2):
            pin.drive_low()
            time.sleep(0.05)
            pin.drive_high()
        assert wait_for(lambda: len(presses) == 2)
    assert "GPIO callback next_identity failed" in caplog.text


# ---------------------------------------------------------------- PIR


def test_pir_idles_after_t_without_motion_and_motion_wakes(factory: MockFactory) -> None:
    recorder = Recorder()
    started = time.monotonic()
    with GpioPanel.open(spec(pir=22), recorder.callbacks(), pin_factory=factory) as panel:
        pin = factory.pin("GPIO22")
        # nobody there from the start: idle after T, not before
        assert wait_for(lambda: recorder.count("idle") == 1, timeout_s=5.0)
        assert IDLE_S <= recorder.calls["idle"][0] - started <= IDLE_S + 1.0
        assert panel.describe()[1].endswith("(idle)") and recorder.count("wake") == 0

        moved = time.monotonic()
        pin.drive_high()
        assert wait_for(lambda: recorder.count("wake") == 1, timeout_s=5.0)
        assert recorder.calls["wake"][0] - moved <= 1.0  # sampled at 10 Hz
        assert panel.motion is not None and not panel.motion.idle
        assert panel.describe()[1].endswith("(awake)")

        time.sleep(IDLE_S + 0.3)  # motion goes on: no idle however long it lasts
        assert recorder.count("idle") == 1

        pin.drive_low()
        still = time.monotonic()
        assert wait_for(lambda: recorder.count("idle") == 2, timeout_s=5.0)
        assert IDLE_S <= recorder.calls["idle"][1] - still <= IDLE_S + 1.0
        time.sleep(IDLE_S + 0.2)
        assert (recorder.count("idle"), recorder.count("wake")) == (2, 1)  # transitions only


def test_motion_during_the_countdown_restarts_it(factory: MockFactory) -> None:
    recorder = Recorder()
    with GpioPanel.open(spec(pir=22), recorder.callbacks(), pin_factory=factory):
        pin = factory.pin("GPIO22")
        time.sleep(IDLE_S / 2)
        pin.drive_high()
        time.sleep(0.3)  # seen by the 10 Hz sampler
        pin.drive_low()
        still = time.monotonic()
        assert wait_for(lambda: recorder.count("idle") == 1, timeout_s=5.0)
        assert IDLE_S <= recorder.calls["idle"][0] - still <= IDLE_S + 1.0
        assert recorder.count("wake") == 0  # it never idled before the motion


# ---------------------------------------------------------------- the panel


def test_panel_opens_every_named_device_and_describes_it(factory: MockFactory) -> None:
    with GpioPanel.open(spec(), Recorder().callbacks(), pin_factory=factory) as panel:
        assert panel.active and panel.led and panel.button and panel.motion
        panel.show("running")
        assert factory.pin("GPIO17").state
        assert panel.describe() == [
            "gpio: MockFactory, bcm numbering",
            "status_led: GPIO17, showing running",
            f"button: GPIO27, short press next identity, hold {HOLD_S:g} s swapping on/off",
            f"pir: GPIO22, idle after {IDLE_S:g} s without motion (awake)",
            "fan: GPIO18, driven by appliance.thermal.fan",
        ]
    # close() released every pin: they can be claimed again
    for number in (17, 27, 22):
        LED(f"GPIO{number}", pin_factory=factory).close()
    panel.close()  # twice is fine


def test_board_numbering_names_header_pins(factory: MockFactory) -> None:
    board = GpioSpec(numbering="board", pins={"status_led": 11, "button": 13})
    with GpioPanel.open(board, GpioCallbacks(), pin_factory=factory) as panel:
        assert [line.split(",")[0] for line in panel.describe()[1:]] == [
            "status_led: BOARD11",
            "button: BOARD13",
        ]


def test_a_device_that_cannot_open_disables_only_itself(
    factory: MockFactory, caplog: pytest.LogCaptureFixture
) -> None:
    squatter = LED("GPIO27", pin_factory=factory)  # someone else holds the button's pin
    try:
        with GpioPanel.open(spec(), GpioCallbacks(), pin_factory=factory) as panel:
            assert panel.button is None and panel.led is not None and panel.motion is not None
            assert any(line.startswith("button: GPIO27 off, ") for line in panel.describe())
    finally:
        squatter.close()
    assert "GPIO button on GPIO27 off" in caplog.text


def test_the_default_pin_factory_is_used_when_none_is_injected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mock = MockFactory()
    monkeypatch.setattr(Device, "pin_factory", mock)
    try:
        with GpioPanel.open(spec(status_led=17), GpioCallbacks()) as panel:
            assert panel.pin_factory is mock and panel.led is not None
    finally:
        mock.close()


def test_without_lgpio_the_mirror_runs_without_gpio_after_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, no_factory_yet: None
) -> None:
    monkeypatch.setitem(sys.modules, "lgpio", None)  # import lgpio fails: no `pi` extra
    monkeypatch.setattr(pin_factory, "CANDIDATES", pin_factory.CANDIDATES[:1])
    profile = load_profiles()["rpi4-cpu"]  # LED, button, PIR and fan pins
    caplog.set_level(logging.INFO, logger="appliance")
    with warnings.catch_warnings(record=True) as leaked:
        warnings.simplefilter("always")
        panel = GpioPanel.open(profile.gpio, Recorder().callbacks())
        assert open_fan(profile) is None
    assert not [w for w in leaked if issubclass(w.category, PinFactoryFallback)]
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1, warned
    assert warned[0].startswith("no GPIO pin factory: install the `pi` extra (lgpio); ")
    assert "Unable to load any default pin factory" not in caplog.text
    assert not panel.active and panel.motion is None
    panel.show("critical")  # no LED: nothing happens, nothing fails
    assert panel.describe() == ["gpio: off, no GPIO pin factory: install the `pi` extra (lgpio)"]
    panel.close()


def test_lgpio_is_tried_first_when_it_imports(
    caplog: pytest.LogCaptureFixture, no_factory_yet: None
) -> None:
    if importlib.util.find_spec("lgpio") is None:
        pytest.skip("lgpio is not installed (the pi extra)")
    factory, why = choose_pin_factory()
    if factory is not None:
        pytest.skip(f"this machine has GPIO ({why})")
    # lgpio imports here but finds no Raspberry Pi: its own error, first, and no install hint
    assert why == "no GPIO pin factory can open this device's GPIO"
    assert "(lgpio: unable to locate Pi revision" in caplog.text


def test_a_factory_already_chosen_is_shared(no_factory_yet: None) -> None:
    mock = MockFactory()
    Device.pin_factory = mock  # as the first choice in this process leaves it
    assert choose_pin_factory() == (mock, "MockFactory")
    with GpioPanel.open(spec(status_led=17), GpioCallbacks()) as panel:
        assert panel.pin_factory is mock


def test_this_machine_without_gpio_resolves_no_factory(no_factory_yet: None) -> None:
    factory, why = resolve_pin_factory()
    if factory is not None:
        pytest.skip(f"this machine has GPIO ({why})")
    assert why.startswith("no GPIO pin factory")


def test_a_profile_without_pins_opens_an_empty_panel(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="appliance.gpio.panel")
    panel = GpioPanel.open(None, GpioCallbacks())
    assert not panel.active
    assert panel.describe() == [
        "gpio: off, the hardware profile names no status_led, button or pir pin"
    ]
    assert [r.levelno for r in caplog.records] == [logging.INFO]


def test_profiles_name_pir_pins_and_gpio_timings_default() -> None:
    profiles = load_profiles()
    for name in ("rpi4-cpu", "rpi5-cpu", "rpi5-coral"):
        gpio = profiles[name].gpio
        assert gpio is not None and gpio.pins["pir"] == 22, name
        assert (gpio.button_hold_s, gpio.motion_idle_s) == (2.0, 120.0)
    with pytest.raises(ValueError, match="motion_idle_s"):
        GpioSpec(motion_idle_s=0)
