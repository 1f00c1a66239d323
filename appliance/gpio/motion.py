"""The PIR motion sensor: wakes the mirror, and idles it after ``idle_after_s`` without motion.

A gpiozero ``MotionSensor`` (the PIR module drives the pin high on motion).
The watch starts awake; when nothing moves for ``idle_after_s`` (counted from
the end of the last motion, or from the start) it calls ``on_idle`` once, and
the next motion calls ``on_wake`` once. Only these transitions are reported.
The callbacks run on gpiozero's or the timer's thread, one at a time: keep
them short (set a flag, dim the display).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

SAMPLE_RATE_HZ = 10.0  # how often gpiozero samples the PIR output


class MotionWatch:
    """The PIR on ``pin``; ``on_wake`` and ``on_idle`` take no arguments."""

    def __init__(
        self,
        pin: str,
        on_wake: Callable[[], None],
        on_idle: Callable[[], None],
        idle_after_s: float = 120.0,
        pin_factory: Any = None,
    ) -> None:
        from gpiozero import MotionSensor

        if not idle_after_s > 0:
            raise ValueError(f"idle_after_s must be > 0, got {idle_after_s}")
        self.pin = pin
        self.idle_after_s = idle_after_s
        self._on_wake = on_wake
        self._on_idle = on_idle
        self._lock = threading.RLock()  # held while a callback runs: transitions stay in order
        self._idle = False
        self._closed = False
        self._timer: threading.Timer | None = None
        self._generation = 0
        self._sensor = MotionSensor(
            pin, queue_len=1, sample_rate=SAMPLE_RATE_HZ, pin_factory=pin_factory
        )
        self._sensor.when_motion = self._motion
        self._sensor.when_no_motion = self._no_motion
        with self._lock:
            if not self._sensor.motion_detected:
                self._arm()

    @property
    def idle(self) -> bool:
        """True from the idle callback until the next motion."""
        return self._idle

    def _arm(self) -> None:
        """Start (or restart) the idle countdown; the lock is held."""
        self._disarm()
        timer = threading.Timer(self.idle_after_s, self._expire, args=(self._generation,))
        timer.name = f"pir-idle-{self.pin}"
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _disarm(self) -> None:
        """Cancel the countdown; a timer already firing sees a new generation."""
        self._generation += 1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _motion(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._disarm()
            if not self._idle:
                return
            self._idle = False
            logger.info("motion on %s: waking", self.pin)
            self._on_wake()

    def _no_motion(self) -> None:
        with self._lock:
            if not self._closed and not self._idle:
                self._arm()

    def _expire(self, generation: int) -> None:
        with self._lock:
            if self._closed or self._idle or generation != self._generation:
                return
            self._timer = None
            self._idle = True
            logger.info("no motion on %s for %g s: idling", self.pin, self.idle_after_s)
            self._on_idle()

    def describe(self) -> str:
        now = "idle" if self._idle else "awake"
        return f"pir: {self.pin}, idle after {self.idle_after_s:g} s without motion ({now})"

    def close(self) -> None:
        """Cancel the countdown and release the pin."""
        with self._lock:
            self._closed = True
            self._disarm()
        self._sensor.close()
