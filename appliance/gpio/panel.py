"""The GPIO panel: status LED, button and PIR motion sensor, built from the profile's pins.

``GpioPanel.open(spec, callbacks)`` opens each device the profile names
(``status_led``, ``button``, ``pir``; the ``fan`` pin belongs to
``appliance.thermal.fan``) on an injectable gpiozero pin factory, or on
the one ``pin_factory.choose_pin_factory`` picks for this device (lgpio first).
Where no factory works (an x86 box, a Jetson) or the profile names no pins,
the panel is empty: every method still works, the chooser has warned once
with what to install, and ``describe()`` says why. A device that cannot open
(a pin in use, no permission on /dev/gpiochip*) disables only itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from appliance.device.profile import GpioSpec
from appliance.gpio.button import PanelButton
from appliance.gpio.motion import MotionWatch
from appliance.gpio.pin_factory import choose_pin_factory
from appliance.gpio.status_led import StatusLed
from appliance.running import Lifecycle

logger = logging.getLogger(__name__)

PANEL_PINS = ("status_led", "button", "pir")
OTHER_OWNERS = {"fan": "appliance.thermal.fan"}

_Device = TypeVar("_Device", StatusLed, PanelButton, MotionWatch)


def _nothing() -> None:
    """The default callback."""


@dataclass(frozen=True)
class GpioCallbacks:
    """What the runtime does on each input; each runs on a gpiozero thread and must be short."""

    next_identity: Callable[[], None] = _nothing
    toggle_swapping: Callable[[], None] = _nothing
    wake: Callable[[], None] = _nothing
    idle: Callable[[], None] = _nothing


def _guarded(name: str, callback: Callable[[], None]) -> Callable[[], None]:
    """``callback`` with its exceptions logged, so they cannot kill a gpiozero thread."""

    def run() -> None:
        try:
            callback()
        except Exception:
            logger.exception("GPIO callback %s failed", name)

    return run


def pin_name(spec: GpioSpec, number: int) -> str:
    """gpiozero's name for a profile pin: ``GPIO17`` (bcm) or ``BOARD7`` (board)."""
    return f"{'GPIO' if spec.numbering == 'bcm' else 'BOARD'}{number}"


def resolve_pin_factory(pin_factory: Any = None) -> tuple[Any, str]:
    """``(factory, its name)``, or ``(None, why no factory works here)`` (see ``pin_factory``)."""
    return choose_pin_factory(pin_factory)


class GpioPanel(Lifecycle):
    """The open GPIO devices (any of them may be None) and why the others are off.

    Open from the start (``start()`` does nothing); ``close()`` releases every pin.
    """

    def __init__(
        self,
        led: StatusLed | None = None,
        button: PanelButton | None = None,
        motion: MotionWatch | None = None,
        notes: tuple[str, ...] = (),
        pin_factory: Any = None,
    ) -> None:
        super().__init__()
        self.led = led
        self.button = button
        self.motion = motion
        self.notes = notes
        self.pin_factory = pin_factory

    @classmethod
    def off(cls, reason: str) -> GpioPanel:
        """An empty panel (the pin factory's chooser has already warned once)."""
        logger.info("GPIO off: %s", reason)
        return cls(notes=(f"gpio: off, {reason}",))

    @classmethod
    def open(
        cls, spec: GpioSpec | None, callbacks: GpioCallbacks, pin_factory: Any = None
    ) -> GpioPanel:
        """Open every device ``spec`` names; never raises for missing hardware."""
        if spec is None or not any(name in spec.pins for name in PANEL_PINS):
            reason = "the hardware profile names no status_led, button or pir pin"
            logger.info("GPIO off: %s", reason)
            return cls(notes=(f"gpio: off, {reason}",))
        factory, factory_name = resolve_pin_factory(pin_factory)
        if factory is None:
            return cls.off(factory_name)
        notes = [f"gpio: {factory_name}, {spec.numbering} numbering"]
        led = _try("status_led", spec, notes, lambda pin: StatusLed(pin, pin_factory=factory))
        button = _try("button", spec, notes, lambda pin: _button(pin, spec, callbacks, factory))
        motion = _try("pir", spec, notes, lambda pin: _motion(pin, spec, callbacks, factory))
        notes += _other_pins(spec)
        panel = cls(led, button, motion, notes=tuple(notes), pin_factory=factory)
        logger.info("GPIO on: %s", "; ".join(panel.describe()))
        return panel

    @property
    def active(self) -> bool:
        """Whether any device is open."""
        return any(device is not None for device in (self.led, self.button, self.motion))

    def show(self, state: str) -> None:
        """Show ``state`` on the status LED; nothing without one."""
        if self.led is not None:
            self.led.show(state)

    def describe(self) -> list[str]:
        """One line per device for the dashboard and ``mirror doctor``."""
        lines = list(self.notes[:1])
        for device in (self.led, self.button, self.motion):
            if device is not None:
                lines.append(device.describe())
        return lines + list(self.notes[1:])

    def _on_close(self) -> None:
        """Release every pin (``close()`` is safe to call twice)."""
        for device in (self.led, self.button, self.motion):
            if device is not None:
                device.close()
        self.led, self.button, self.motion = None, None, None


def _try(
    name: str, spec: GpioSpec, notes: list[str], build: Callable[[str], _Device]
) -> _Device | None:
    """``build(pin)`` for pin ``name``; None if the profile lacks it or it fails (noted, warned)."""
    if name not in spec.pins:
        return None
    pin = pin_name(spec, spec.pins[name])
    try:
        return build(pin)
    except Exception as exc:  # gpiozero's pin errors, OSError on /dev/gpiochip*
        logger.warning("GPIO %s on %s off: %s", name, pin, exc)
        notes.append(f"{name}: {pin} off, {exc}")
        return None


def _button(pin: str, spec: GpioSpec, callbacks: GpioCallbacks, factory: Any) -> PanelButton:
    return PanelButton(
        pin,
        on_short=_guarded("next_identity", callbacks.next_identity),
        on_long=_guarded("toggle_swapping", callbacks.toggle_swapping),
        hold_s=spec.button_hold_s,
        pin_factory=factory,
    )


def _motion(pin: str, spec: GpioSpec, callbacks: GpioCallbacks, factory: Any) -> MotionWatch:
    return MotionWatch(
        pin,
        on_wake=_guarded("wake", callbacks.wake),
        on_idle=_guarded("idle", callbacks.idle),
        idle_after_s=spec.motion_idle_s,
        pin_factory=factory,
    )


def _other_pins(spec: GpioSpec) -> list[str]:
    """Notes on the profile's pins this panel does not drive."""
    notes = []
    for name, number in spec.pins.items():
        if name in PANEL_PINS:
            continue
        owner = OTHER_OWNERS.get(name)
        where = f"driven by {owner}" if owner else "not used by anything"
        notes.append(f"{name}: {pin_name(spec, number)}, {where}")
    return notes
