"""The status LED: steady while running, slow blink when degraded or hot, fast on error.

One gpiozero ``LED`` on one pin. ``show(state)`` picks the pattern; showing the
state already shown changes nothing, so the runtime may call it on every tick
without restarting a blink.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Literal, get_args

logger = logging.getLogger(__name__)

LedState = Literal["running", "degraded", "hot", "error", "critical"]
LED_STATES: tuple[str, ...] = get_args(LedState)


@dataclass(frozen=True)
class Blink:
    """A blink pattern: this long on, then this long off, repeated."""

    on_s: float
    off_s: float


SLOW_BLINK = Blink(on_s=1.0, off_s=1.0)
FAST_BLINK = Blink(on_s=0.2, off_s=0.2)

# None means steady on.
PATTERNS: dict[str, Blink | None] = {
    "running": None,
    "degraded": SLOW_BLINK,
    "hot": SLOW_BLINK,
    "error": FAST_BLINK,
    "critical": FAST_BLINK,
}


def pattern_words(state: str) -> str:
    """The pattern of ``state`` in words, e.g. ``slow blink (1 s on / 1 s off)``."""
    pattern = PATTERNS[state]
    if pattern is None:
        return "steady"
    speed = "fast" if pattern == FAST_BLINK else "slow"
    return f"{speed} blink ({pattern.on_s:g} s on / {pattern.off_s:g} s off)"


class StatusLed:
    """The status LED on ``pin`` (a gpiozero pin name such as ``GPIO17`` or ``BOARD7``)."""

    def __init__(self, pin: str, pin_factory: Any = None) -> None:
        from gpiozero import LED

        self.pin = pin
        self._led = LED(pin, pin_factory=pin_factory)
        self._lock = threading.Lock()
        self._state: str | None = None
        self._closed = False

    @property
    def state(self) -> str | None:
        """The state shown, or None before the first ``show``."""
        return self._state

    def show(self, state: str) -> None:
        """Show ``state`` (running, degraded, hot, error or critical); nothing once closed."""
        if state not in PATTERNS:
            raise ValueError(f"LED state must be one of {', '.join(LED_STATES)}, got {state!r}")
        with self._lock:
            if self._closed or state == self._state:
                return
            pattern = PATTERNS[state]
            if pattern is None:
                self._led.on()
            else:
                self._led.blink(on_time=pattern.on_s, off_time=pattern.off_s)
            self._state = state
        logger.debug("status LED %s: %s, %s", self.pin, state, pattern_words(state))

    def describe(self) -> str:
        shown = "nothing yet" if self._state is None else self._state
        return f"status_led: {self.pin}, showing {shown}"

    def close(self) -> None:
        """Stop any blink, switch the LED off and release the pin."""
        with self._lock:
            self._closed = True
            self._led.close()
