"""A PWM fan on the GPIO pin named ``fan``, following the profile's curve with hysteresis.

The curve is a list of steps (temperature, duty): off below the first step,
each step's duty from its temperature up; a step is left only when the
temperature falls ``hysteresis_c`` below where it starts (the Raspberry Pi
5's own curve: 30/50/70/100 % at 50/60/67.5/75 C, 5 C back). An unknown
temperature (a sensor failure) runs the fan at full speed.

The pin is driven through gpiozero's ``PWMOutputDevice`` (its pin factory is
injectable: tests use ``MockFactory(pin_class=MockPWMPin)``). On a machine
without GPIO, or with gpiozero not installed, ``open_fan`` says so once and
returns None: the fan is absent.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Any, Protocol

from appliance.hardware.profile import FanSpec, HardwareProfile

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
    """What the fan needs of gpiozero's ``PWMOutputDevice``."""

    value: float

    def close(self) -> None: ...


class Fan:
    """``update`` with each temperature read; the device follows the curve."""

    def __init__(self, device: PwmOutput, curve: FanCurve, pin: str = "") -> None:
        self.device = device
        self.curve = curve
        self.pin = pin
        self._level = 0
        self.device.value = 0.0

    @property
    def duty(self) -> float:
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
    spec = profile.thermal.fan
    try:
        from gpiozero import GPIOZeroError, PWMOutputDevice
    except ImportError as exc:
        logger.warning("no fan on %s: gpiozero is not installed (%s)", pin, exc)
        return None
    try:
        with warnings.catch_warnings():  # one line below instead of a fallback warning each
            warnings.simplefilter("ignore")
            device = PWMOutputDevice(
                pin, initial_value=0.0, frequency=spec.pwm_hz, pin_factory=pin_factory
            )
    except (GPIOZeroError, OSError, RuntimeError, ValueError) as exc:
        logger.warning("no fan on %s: %s", pin, " ".join(str(exc).split()))
        return None
    logger.info("fan on %s, %g Hz PWM", pin, spec.pwm_hz)
    return Fan(device, FanCurve.from_spec(spec), pin)
