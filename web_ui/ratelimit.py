"""Login rate limiting: after ``max_failures`` failures a key is locked, longer each time.

Keys are the client address and the account name, so neither one client
trying many accounts nor many clients trying one account get far. A success
clears the keys it names. Memory is bounded: the oldest unlocked records go first,
so flooding the table with new names does not free a locked one.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

logger = logging.getLogger(__name__)


@dataclass
class _Record:
    failures: int = 0
    lockouts: int = 0
    locked_until: float = 0.0


class LoginLimiter:
    """``max_failures`` failures lock a key for ``lock_s``, doubling up to ``max_lock_s``."""

    def __init__(
        self,
        max_failures: int = 5,
        lock_s: float = 60.0,
        max_lock_s: float = 3600.0,
        *,
        max_keys: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.lock_s = lock_s
        self.max_lock_s = max_lock_s
        self.max_keys = max_keys
        self._clock = clock
        self._lock = threading.Lock()
        self._records: OrderedDict[str, _Record] = OrderedDict()

    def locked_for(self, keys: Iterable[str]) -> int:
        """Whole seconds until every one of ``keys`` may try again (0: now)."""
        now = self._clock()
        with self._lock:
            waits = [r.locked_until - now for k in keys if (r := self._records.get(k))]
        return max([0, *(math.ceil(w) for w in waits if w > 0)])

    def failed(self, keys: Iterable[str]) -> None:
        now = self._clock()
        with self._lock:
            for key in keys:
                record = self._record(key)
                record.failures += 1
                if record.failures >= self.max_failures:
                    lock_s = min(self.max_lock_s, self.lock_s * 2**record.lockouts)
                    record.locked_until = now + lock_s
                    record.lockouts += 1
                    record.failures = 0
                    logger.warning(
                        "login locked for %s s after repeated failures (%s)", lock_s, key
                    )

    def succeeded(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._records.pop(key, None)

    def _record(self, key: str) -> _Record:
        record = self._records.pop(key, None) or _Record()
        self._records[key] = record
        if len(self._records) > self.max_keys:
            self._evict(self._clock())
        return record

    def _evict(self, now: float) -> None:
        """Drop the oldest record that is not locked (the oldest of all if every one is)."""
        for key, record in self._records.items():
            if record.locked_until <= now:
                del self._records[key]
                return
        self._records.popitem(last=False)
