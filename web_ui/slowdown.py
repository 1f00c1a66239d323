"""The global slow-down behind the per-address lock-out: a cap on password checks per window.

Every password check from a client that has not logged in here before takes
one place in a sliding window of ``max_checks`` per ``window_s`` shared by
all addresses; when the window is full, such clients wait until its oldest
check leaves it. So a spray from many addresses gets at most ``max_checks``
guesses per ``window_s`` in all, while a client that logged in before (a
trusted address, remembered for ``trust_s``) is not slowed by it: it only has
its own per-address lock-out. Memory is bounded (``max_checks`` times, and at
most ``max_trusted`` addresses, the least recent forgotten first).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

logger = logging.getLogger(__name__)


class GlobalSlowdown:
    """At most ``max_checks`` untrusted password checks per ``window_s``, from all addresses."""

    def __init__(
        self,
        max_checks: int = 30,
        window_s: float = 60.0,
        *,
        trust_s: float = 30 * 86400.0,
        max_trusted: int = 64,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_checks = max_checks
        self.window_s = window_s
        self.trust_s = trust_s
        self.max_trusted = max_trusted
        self._clock = clock
        self._lock = threading.Lock()
        self._checks: deque[float] = deque(maxlen=max_checks)
        self._trusted: OrderedDict[str, float] = OrderedDict()
        self._warned_at = -math.inf

    def take(self, client: str) -> int:
        """Take a place for one check by ``client``: 0, or whole seconds to wait instead."""
        now = self._clock()
        with self._lock:
            if self._is_trusted(client, now):
                return 0
            if len(self._checks) == self.max_checks:
                wait_s = self._checks[0] + self.window_s - now
                if wait_s > 0:
                    self._warn(now)
                    return max(1, math.ceil(wait_s))
            self._checks.append(now)
            return 0

    def trust(self, client: str) -> None:
        """``client`` logged in: from now on only its own lock-out applies to it."""
        with self._lock:
            self._trusted.pop(client, None)
            self._trusted[client] = self._clock() + self.trust_s
            while len(self._trusted) > self.max_trusted:
                self._trusted.popitem(last=False)

    def _is_trusted(self, client: str, now: float) -> bool:
        until = self._trusted.get(client)
        if until is None:
            return False
        if until <= now:
            del self._trusted[client]
            return False
        return True

    def _warn(self, now: float) -> None:
        if now - self._warned_at >= self.window_s:
            self._warned_at = now
            logger.warning(
                "password checks from new addresses slowed down: more than %s in %s s",
                self.max_checks,
                self.window_s,
            )
