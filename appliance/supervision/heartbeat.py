"""The service heartbeat: READY once the display shows a frame, WATCHDOG while frames flow.

``Heartbeat.beat(written)`` is called now and then from the main thread
with the number of frames the display sink has written so far:

- ``READY=1`` once, when the first frame reached the display;
- ``WATCHDOG=1`` every ``interval_s`` (half of systemd's ``WatchdogSec``),
  but only while that count keeps increasing: with no new frame for longer
  than ``stall_s`` the heartbeat stops, and systemd restarts the service
  (a hung stage, a stuck sink); it resumes if frames flow again;
- ``STATUS=`` every ``status_every_s`` with the caller's status text.

``stop()`` sends ``STOPPING=1``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from appliance.supervision.notify import Notifier

logger = logging.getLogger(__name__)

STALL_S = 2.0  # no new frame on the display for this long: the pipeline counts as hung
STATUS_EVERY_S = 10.0


class Heartbeat:
    """Tells systemd the mirror is ready and alive from the display's frame count."""

    def __init__(
        self,
        notifier: Notifier,
        *,
        stall_s: float = STALL_S,
        status_every_s: float = STATUS_EVERY_S,
        status: Callable[[], str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not stall_s > 0:
            raise ValueError(f"stall_s must be > 0 s, got {stall_s}")
        self.notifier = notifier
        self.stall_s = stall_s
        self.interval_s = notifier.watchdog_interval()
        self.status_every_s = status_every_s
        self._status = status
        self._clock = clock
        self.ready = False
        self._written = 0
        self._progress_at = clock()
        self._next_watchdog = 0.0
        self._next_status = 0.0
        self._stalled = False

    def __repr__(self) -> str:
        return f"Heartbeat({self.notifier!r}, ready={self.ready})"

    def beat(self, written: int) -> None:
        """Note the display's frame count and send whatever is due."""
        if not self.notifier.enabled:
            return
        now = self._clock()
        if written > self._written:
            self._written = written
            self._progress_at = now
        if not self.ready:
            if written == 0:
                return
            self.ready = True
            self.notifier.ready()
            logger.info("first frame on the display: told systemd READY")
        self._watchdog(now)
        if self._status is not None and self.status_every_s > 0 and now >= self._next_status:
            self.notifier.status(self._status())
            self._next_status = now + self.status_every_s

    def stop(self) -> None:
        """Tell systemd the mirror is stopping (no heartbeat needed from now on)."""
        self.notifier.stopping()
        self.notifier.close()

    def _watchdog(self, now: float) -> None:
        stalled = now - self._progress_at > self.stall_s
        if stalled != self._stalled:
            self._stalled = stalled
            if stalled:
                logger.warning(
                    "no new frame on the display for %.1f s: watchdog heartbeat withheld",
                    now - self._progress_at,
                )
            else:
                logger.info("frames flow again: watchdog heartbeat resumed")
        if stalled or now < self._next_watchdog:
            return
        self.notifier.watchdog()
        self._next_watchdog = now + self.interval_s
