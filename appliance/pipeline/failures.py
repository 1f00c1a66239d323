"""The error policy of one pipeline stage: log once per kind, count, back off.

The first exception of each kind is logged (with its traceback unless it is
an expected ``MirrorError``, such as a camera not found), later ones are only
counted (in telemetry). The first failure in a row costs no pause; each
further consecutive one doubles the pause, from ``first_pause_s`` up to
``max_pause_s``, so a broken stage never spins. A success resets it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from appliance.errors import MirrorError
from appliance.pipeline.telemetry import Telemetry

logger = logging.getLogger(__name__)


class StageFailures:
    """Failure bookkeeping for the stage ``stage``; used by one thread."""

    def __init__(
        self,
        stage: str,
        telemetry: Telemetry,
        *,
        first_pause_s: float = 0.01,
        max_pause_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stage = stage
        self.consecutive = 0
        self._telemetry = telemetry
        self._first = first_pause_s
        self._max = max_pause_s
        self._clock = clock
        self._logged: set[str] = set()
        self._retry_at = 0.0

    def failed(self, exc: Exception) -> float:
        """Record ``exc``; the pause (s) the stage should now take."""
        kind = type(exc).__name__
        self._telemetry.record_error(self.stage, exc)
        if kind not in self._logged:
            self._logged.add(kind)
            logger.error(
                "%s failed with %s: %s (further %s errors are only counted)",
                self.stage,
                kind,
                exc,
                kind,
                exc_info=None if isinstance(exc, MirrorError) else exc,  # expected: says itself
            )
        self.consecutive += 1
        pause = self.pause_s()
        self._retry_at = self._clock() + pause
        return pause

    def succeeded(self) -> None:
        self.consecutive = 0
        self._retry_at = 0.0

    def pause_s(self) -> float:
        """No pause after one failure, then first_pause_s doubling up to max_pause_s."""
        if self.consecutive <= 1:
            return 0.0
        return min(self._max, self._first * 2.0 ** min(self.consecutive - 2, 30))

    def backing_off(self) -> bool:
        """True until the pause after the last failure is over."""
        return self._clock() < self._retry_at
