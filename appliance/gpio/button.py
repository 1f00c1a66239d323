"""The push button: a short press asks for the next identity, a long press toggles swapping.

A gpiozero ``Button`` wired from the pin to ground (internal pull-up). A press
released before ``hold_s`` is a short press, reported on release; a press held
for ``hold_s`` is a long press, reported once while still held, and its release
reports nothing more. The callbacks run on gpiozero's threads: keep them short.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

BOUNCE_S = 0.05  # contact bounce shorter than this is ignored (by the pin driver)


class PanelButton:
    """The button on ``pin``; ``on_short`` and ``on_long`` take no arguments."""

    def __init__(
        self,
        pin: str,
        on_short: Callable[[], None],
        on_long: Callable[[], None],
        hold_s: float = 2.0,
        pin_factory: Any = None,
    ) -> None:
        from gpiozero import Button

        if not hold_s > 0:
            raise ValueError(f"hold_s must be > 0, got {hold_s}")
        self.pin = pin
        self.hold_s = hold_s
        self._on_short = on_short
        self._on_long = on_long
        self._lock = threading.Lock()
        self._held = False
        self._button = Button(
            pin, pull_up=True, bounce_time=BOUNCE_S, hold_time=hold_s, pin_factory=pin_factory
        )
        self._button.when_pressed = self._pressed
        self._button.when_held = self._was_held
        self._button.when_released = self._released

    def _pressed(self) -> None:
        with self._lock:
            self._held = False

    def _was_held(self) -> None:
        with self._lock:
            self._held = True
        logger.info("button %s held %g s: swapping on/off", self.pin, self.hold_s)
        self._on_long()

    def _released(self) -> None:
        with self._lock:
            held, self._held = self._held, False
        if not held:
            logger.info("button %s pressed: next identity", self.pin)
            self._on_short()

    def describe(self) -> str:
        return (
            f"button: {self.pin}, short press next identity, hold {self.hold_s:g} s swapping on/off"
        )

    def close(self) -> None:
        """Release the pin and stop the hold thread."""
        self._button.close()
