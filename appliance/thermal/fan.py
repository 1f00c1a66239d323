"""A PWM fan on the GPIO pin named ``fan``, following the profile's curve with hysteresis.

The curve is a list of steps (temperature, duty): off below the first step,
each step's duty from its temperature up; a step is left only when the
temperature falls ``hysteresis_c`` below where it starts (the Raspberry Pi
5's own curve: 30/50/70/100 % at 50/60/67.5/75 C, 5 C back). An unknown
temperature (a sensor failure) runs the fan at full speed.

The pin is driven through gpiozero's ``PWMOutputDevice`` on the process's pin
factory (``pin_factory.choose_pin_factory``; injectable: tests use
``MockFactory(pin_class=MockPWMPin)``). A factory without PWM (gpiozero's
``native`` on a Pi 4, a plain ``MockPin``) gets an on/off fan instead: a
``DigitalOutputDevice`` switched on at the curve's first step (and off 5 C
below it), not a fan that never runs. On a machine without GPIO, or with
gpiozero not installed, ``open_fan`` returns None: the fan is absent.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Any, Protocol

from appliance.device.profile import FanSpec, HardwareProfile
from appliance.gpio.pin_factory import choose_pin_factory

logger = logging.getLogger(__name__)

FAN_PIN = "fan"


@dataclass(frozen=True)
class FanCurve:
    """Steps ``(at_c, duty)`` by rising temperature, and how far back a step is left."""

    steps: tuple[tuple[float, float], ...]
    hysteresis_c: float = 5.0

    @classmethod
    def from_spec(cls, spec: FanSpec) -> FanCurve:
        return cls(tuple((s.at_c, s.duty) for s in spec.curve), spec.hysteresis_c)

    def level(self, temperature_c: float | None, current: int) -> int:
        """The step in force (0: off) at ``temperature_c``, coming from step ``current``."""
        top = len(self.steps)
        if temperature_c is None:
            return top
        level = min(max(current, 0), top)
        while level < top and temperature_c >= self.steps[level][0]:
            level += 1
        while level > 0 and temperature_c < self.steps[level - 1][0] - self.hysteresis_c:
            level -= 1
        return level

    def duty(self, level: int) -> float:
        return 0.0 if level <= 0 else self.steps[level - 1][1]


class PwmOutput(Protocol):
    """What the fan needs of gpiozero's ``PWMOutputDevice`` (or ``DigitalOutputDevice``)."""

    value: float

    def close(self) -> None: ...


class Fan:
    """``update`` with each temperature read; the device follows the curve.

    ``on_off``: the pin has no PWM, so any step of the curve runs the fan full.
    """

    def __init__(
        self, device: PwmOutput, curve: FanCurve, pin: str = "", *, on_off: bool = False
    ) -> None:
        self.device = device
        self.curve = curve
        self.pin = pin
        self.on_off = on_off
        self._level = 0
        self.device.value = 0.0

    @property
    def duty(self) -> float:
        """The duty the pin is driven at (0 or 1 for an on/off fan)."""
        if self.on_off:
            return 1.0 if self._level > 0 else 0.0
        return self.curve.duty(self._level)

    def update(self, temperature_c: float | None) -> float:
        """Set the duty for ``temperature_c`` (None: unknown, full speed); returns it."""
        level = self.curve.level(temperature_c, self._level)
        if level != self._level:
            self._level = level
            self.device.value = self.duty
            shown = "unknown" if temperature_c is None else f"{temperature_c:.1f} C"
            logger.info("fan %s: %.0f%% at %s", self.pin, self.duty * 100, shown)
        return self.duty

    def close(self) -> None:
        self.device.close()

    def __enter__(self) -> Fan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fan_pin(profile: HardwareProfile) -> str | None:
    """The gpiozero name of the profile's ``fan`` pin (``GPIO18``, ``BOARD12``), if any."""
    if profile.gpio is None or FAN_PIN not in profile.gpio.pins:
        return None
    prefix = "GPIO" if profile.gpio.numbering == "bcm" else "BOARD"
    return f"{prefix}{profile.gpio.pins[FAN_PIN]}"


def open_fan(profile: HardwareProfile, *, pin_factory: Any = None) -> Fan | None:
    """The profile's fan, or None (said once, with why) when there is none to drive."""
    pin = fan_pin(profile)
    if pin is None:
        logger.info("no fan: profile %s has no GPIO pin named %r", profile.name, FAN_PIN)
        return None
    factory, factory_name = choose_pin_factory(pin_factory)
    if factory is None:
        logger.info("no fan on %s: %s", pin, factory_name)  # the chooser has warned
        return None
    spec = profile.thermal.fan
    from gpiozero import DigitalOutputDevice, GPIOZeroError, PinPWMUnsupported, PWMOutputDevice

    try:
        with warnings.catch_warnings():  # one line below instead of a fallback warning each
            warnings.simplefilter("ignore")
            try:
                device: PwmOutput = PWMOutputDevice(
                    pin, initial_value=0.0, frequency=spec.pwm_hz, pin_factory=factory
                )
            except PinPWMUnsupported:
                device = DigitalOutputDevice(pin, initial_value=False, pin_factory=factory)
                on_off = True
            else:
                on_off = False
    except (GPIOZeroError, OSError, RuntimeError, ValueError) as exc:
        logger.warning("no fan on %s: %s", pin, " ".join(str(exc).split()))
        return None
    curve = FanCurve.from_spec(spec)
    if on_off:
        logger.warning(
            "fan on %s: on/off only, at %g C and up (pin factory %s has no PWM; %s)",
            pin,
            curve.steps[0][0],
            factory_name,
            "lgpio gives PWM: install the `pi` extra",
        )
    else:
        logger.info("fan on %s, %g Hz PWM (%s)", pin, spec.pwm_hz, factory_name)
    return Fan(device, curve, pin, on_off=on_off)
