"""RAUC's A/B slots for ``/metrics``, read beside the requests, never in them.

``rauc status`` asks RAUC's service over D-Bus and may take long (up to the read's own
timeout), so a request only takes what the last read left: the first request after
``MAX_AGE_S`` starts one new read in a thread of its own and answers with the old
value. RAUC is asked at most once every ``MAX_AGE_S``, however often Prometheus scrapes.
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from collections.abc import Callable

from flask import Flask

from appliance.updates.slots import SlotsStatus, UpdateUnavailableError, slots_status

logger = logging.getLogger(__name__)

MAX_AGE_S = 60.0
EXTENSION_KEY = "mirror_slots_cache"


class SlotsCache:
    """The slots of the last read (None before it ended, and on a system without RAUC)."""

    def __init__(
        self,
        read: Callable[[], SlotsStatus] = slots_status,
        max_age_s: float = MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read
        self.max_age_s = max_age_s
        self._clock = clock
        self._lock = threading.Lock()
        self._value: SlotsStatus | None = None
        self._started: float | None = None  # when the last read started
        self._reader: threading.Thread | None = None

    def current(self) -> SlotsStatus | None:
        """The last read's slots; starts a new read (not waited for) when it is due."""
        with self._lock:
            now = self._clock()
            due = self._started is None or now - self._started >= self.max_age_s
            if due and (self._reader is None or not self._reader.is_alive()):
                self._started = now
                self._reader = threading.Thread(
                    target=self._refresh, name="mirror-rauc-status", daemon=True
                )
                self._reader.start()
            return self._value

    def _refresh(self) -> None:
        try:
            value: SlotsStatus | None = self._read()
        except (UpdateUnavailableError, subprocess.TimeoutExpired, OSError) as exc:
            logger.debug("no A/B slots for /metrics: %s", exc)
            value = None
        with self._lock:
            self._value = value


def slots_cache(app: Flask) -> SlotsCache:
    """The app's cache (made on first use)."""
    cache = app.extensions.get(EXTENSION_KEY)
    if cache is None:
        cache = app.extensions.setdefault(EXTENSION_KEY, SlotsCache())
    assert isinstance(cache, SlotsCache)
    return cache
