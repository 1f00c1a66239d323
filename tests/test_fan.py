"""The GPIO fan: the Raspberry Pi 5's curve and its hysteresis on gpiozero's mock PWM pins.

``MockFactory(pin_class=MockPWMPin)`` is gpiozero's own simulated backend: the
pin records every value it is driven to, as a real PWM pin would be set.
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Iterator

import pytest
from gpiozero import Device
from gpiozero.pins.mock import MockFactory, MockPin, MockPWMPin

from appliance.device.catalog import load_profiles
from appliance.device.profile import PI5_FAN_CURVE, FanSpec, HardwareProfile
from appliance.gpio import pin_factory
from appliance.thermal.fan import FanCurve, fan_pin, open_fan

PI5 = FanCurve.from_spec(FanSpec())


@pytest.fixture
def factory() -> Iterator[MockFactory]:
    mock = MockFactory(pin_class=MockPWMPin)
    yield mock
    mock.close()


@pytest.fixture(scope="module")
def profiles() -> dict[str, HardwareProfile]:
    return load_profiles()


def follow(curve: FanCurve, temperatures: list[float | None]) -> list[float]:
    level, duties = 0, []
    for temperature in temperatures:
        level = curve.level(temperature, level)
        duties.append(curve.duty(level))
    return duties


def test_the_default_curve_is_the_pi5s_own() -> None:
    assert [(s.at_c, s.duty) for s in PI5_FAN_CURVE] == [
        (50.0, 0.3),
        (60.0, 0.5),
        (67.5, 0.7),
        (75.0, 1.0),
    ]
    assert PI5.hysteresis_c == 5.0


def test_curve_rising() -> None:
    temps: list[float | None] = [40, 49.9, 50, 59.9, 60, 67.4, 67.5, 74.9, 75, 90]
    assert follow(PI5, temps) == [0, 0, 0.3, 0.3, 0.5, 0.5, 0.7, 0.7, 1.0, 1.0]


def test_curve_falling_holds_each_step_until_5_c_below() -> None:
    temps: list[float | None] = [80, 70.1, 70, 69.9, 62.6, 62.4, 55.1, 54.9, 45.1, 44.9]
    assert follow(PI5, temps) == [1.0, 1.0, 1.0, 0.7, 0.7, 0.5, 0.5, 0.3, 0.3, 0.0]


def test_curve_jumps_several_steps_at_once() -> None:
    assert follow(PI5, [40, 80, 40]) == [0.0, 1.0, 0.0]


def test_unknown_temperature_runs_the_fan_full() -> None:
    assert follow(PI5, [40, None, 64]) == [0.0, 1.0, 0.7]  # then down by the hysteresis


def test_fan_on_a_mock_pwm_pin_follows_the_curve(
    factory: MockFactory, profiles: dict[str, HardwareProfile]
) -> None:
    profile = profiles["rpi4-cpu"]
    assert fan_pin(profile) == "GPIO18"
    fan = open_fan(profile, pin_factory=factory)
    assert fan is not None
    pin = factory.pin(18)
    assert pin.frequency == 100
    driven = []
    for temperature in (45.0, 52.0, 61.0, 58.0, 54.0, 44.0, 76.0, None):
        fan.update(temperature)
        driven.append(pin.state)
    assert driven == [0, 0.3, 0.5, 0.5, 0.3, 0, 1.0, 1.0]
    states = [s.state for s in pin.states]
    assert states[-1] == 1.0 and 0.7 not in states  # 76 C went straight to full
    fan.close()
    assert pin.function == "input"  # released


def test_board_numbering_names_the_header_pin(factory: MockFactory) -> None:
    profile = load_profiles()["rpi4-cpu"]
    gpio = profile.gpio
    assert gpio is not None
    board = profile.model_copy(
        update={"gpio": gpio.model_copy(update={"numbering": "board", "pins": {"fan": 12}})}
    )
    assert fan_pin(board) == "BOARD12"
    fan = open_fan(board, pin_factory=factory)
    assert fan is not None
    fan.update(80.0)
    assert factory.pin(18).state == 1.0  # header pin 12 is GPIO18
    fan.close()


def test_no_fan_pin_is_said_once(
    caplog: pytest.LogCaptureFixture, profiles: dict[str, HardwareProfile]
) -> None:
    with caplog.at_level(logging.INFO, logger="appliance.thermal.fan"):
        assert open_fan(profiles["rpi5-cpu"]) is None
    assert [r.getMessage() for r in caplog.records] == [
        "no fan: profile rpi5-cpu has no GPIO pin named 'fan'"
    ]


def test_without_lgpio_the_fan_is_absent_and_one_warning_says_what_to_install(
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    profiles: dict[str, HardwareProfile],
    no_factory_yet: None,
) -> None:
    monkeypatch.setitem(sys.modules, "lgpio", None)  # import lgpio fails, as without the extra
    monkeypatch.setattr(pin_factory, "CANDIDATES", pin_factory.CANDIDATES[:1])
    with warnings.catch_warnings(record=True) as escaped, caplog.at_level(logging.INFO):
        warnings.simplefilter("always")
        assert open_fan(profiles["rpi4-cpu"]) is None
        assert open_fan(profiles["rpi4-cpu"]) is None
    assert not escaped
    said = [r for r in caplog.records if r.name.startswith(("appliance.thermal", "appliance.gpio"))]
    warned = [r.getMessage() for r in said if r.levelno >= logging.WARNING]
    assert len(warned) == 1
    assert warned[0].startswith("no GPIO pin factory: install the `pi` extra (lgpio); ")
    assert "lgpio: lgpio is not installed" in warned[0]
    assert "Unable to load any default pin factory" not in caplog.text
    assert [r.getMessage() for r in said if r.name == "appliance.thermal.fan"] == [
        "no fan on GPIO18: no GPIO pin factory: install the `pi` extra (lgpio)"
    ] * 2


def test_a_pin_without_pwm_runs_the_fan_on_off_at_the_first_step(
    caplog: pytest.LogCaptureFixture, profiles: dict[str, HardwareProfile]
) -> None:
    plain = MockFactory(pin_class=MockPin)  # no PWM, like gpiozero's native factory on a Pi 4
    try:
        with caplog.at_level(logging.INFO, logger="appliance.thermal.fan"):
            fan = open_fan(profiles["rpi4-cpu"], pin_factory=plain)
        assert fan is not None and fan.on_off
        assert "on/off only, at 50 C and up" in caplog.text
        pin = plain.pin(18)
        driven = []
        for temperature in (45.0, 50.0, 76.0, 46.0, 44.9, 49.9, None):
            driven.append((fan.update(temperature), pin.state))
        assert driven == [
            (0.0, False),
            (1.0, True),  # the first step switches it on, full
            (1.0, True),
            (1.0, True),  # held until 5 C below the step
            (0.0, False),
            (0.0, False),
            (1.0, True),  # unknown temperature: on
        ]
        fan.close()
        assert pin.function == "input"
    finally:
        plain.close()


@pytest.mark.parametrize(("pin_class", "on_off"), [("mockpwmpin", False), ("mockpin", True)])
def test_the_factory_named_in_the_environment_is_used(
    monkeypatch: pytest.MonkeyPatch,
    profiles: dict[str, HardwareProfile],
    no_factory_yet: None,
    pin_class: str,
    on_off: bool,
) -> None:
    # GPIOZERO_PIN_FACTORY is gpiozero's own setting: an operator's choice wins over lgpio.
    monkeypatch.setenv("GPIOZERO_PIN_FACTORY", "mock")
    monkeypatch.setenv("GPIOZERO_MOCK_PIN_CLASS", pin_class)
    fan = open_fan(profiles["rpi4-cpu"])
    assert fan is not None and fan.on_off is on_off
    assert type(Device.pin_factory).__name__ == "MockFactory"
    fan.update(62.0)
    assert Device.pin_factory.pin(18).state == (True if on_off else 0.5)
    fan.close()


@pytest.mark.parametrize(
    ("curve", "needle"),
    [
        ([{"at_c": 60, "duty": 0.5}, {"at_c": 50, "duty": 0.6}], "fan steps must rise"),
        ([{"at_c": 50, "duty": 0.5}, {"at_c": 60, "duty": 0.3}], "fan duty must not fall"),
        ([{"at_c": 50, "duty": 1.5}], "less than or equal to 1"),
    ],
)
def test_bad_curve_is_rejected(curve: list[dict[str, float]], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        FanSpec.model_validate({"curve": curve})
