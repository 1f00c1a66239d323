"""Hold a frame rate: wait until the next frame is due, never burst to catch up."""

from __future__ import annotations

import logging
import time

from appliance.errors import ConfigError

logger = logging.getLogger(__name__)


class Pacer:
    """Schedules frames ``1/fps`` apart on the monotonic clock.

    The first frame is due at once. A consumer that falls more than one
    period behind restarts the schedule from now instead of getting a burst
    of overdue frames.
    """

    def __init__(self, fps: float) -> None:
        if not fps > 0:
            raise ConfigError(f"frame rate must be > 0, got {fps}")
        self.period_ns = round(1e9 / fps)
        self._due_ns: int | None = None

    def reset(self) -> None:
        """Make the next frame due at once."""
        self._due_ns = None

    def delay_s(self) -> float:
        """Seconds until the next frame is due (0 when it is due now)."""
        if self._due_ns is None:
            return 0.0
        return max(0, self._due_ns - time.monotonic_ns()) / 1e9

    def wait(self, timeout_s: float | None = None) -> bool:
        """Sleep until the next frame is due; False when that is beyond ``timeout_s``."""
        delay = self.delay_s()
        if timeout_s is not None and delay > timeout_s:
            time.sleep(max(0.0, timeout_s))
            return False
        if delay > 0:
            time.sleep(delay)
        return True

    def mark(self) -> None:
        """Record that the due frame was delivered; schedule the next one."""
        now = time.monotonic_ns()
        if self._due_ns is None or now - self._due_ns > self.period_ns:
            self._due_ns = now + self.period_ns
        else:
            self._due_ns += self.period_ns
