"""Login rate limiting: after ``max_failures`` failures a key is locked, longer each time.

A key is one (account, client address) pair (``attempt_key``; an IPv6 client
counts as its /64, which one host can fill with addresses), so wrong
passwords from one address never lock the right one out from another. What
bounds a spray from many addresses is the ``GlobalSlowdown`` behind it.
``attempt`` counts a check before the password is compared (so concurrent
guesses cannot slip past the count) and a success clears it again. Memory is
bounded: the oldest unlocked records go first, so flooding the table with
new keys does not free a locked one.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from web_ui.slowdown import GlobalSlowdown

logger = logging.getLogger(__name__)

MAX_NAME_CHARS = 64
IPV6_PREFIX = 64


def client_key(address: str | None) -> str:
    """The client as the limiter counts it: its IPv4 address, or its IPv6 /64."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return address or "?"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/{IPV6_PREFIX}", strict=False))
    return str(ip)


def attempt_key(username: str, client: str) -> str:
    """The lock-out key of one account name tried from one client."""
    return f"{username[:MAX_NAME_CHARS].casefold()}|{client}"


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
        slowdown: GlobalSlowdown | None = None,
    ) -> None:
        self.max_failures = max_failures
        self.lock_s = lock_s
        self.max_lock_s = max_lock_s
        self.max_keys = max_keys
        self._clock = clock
        self._lock = threading.Lock()
        self._records: OrderedDict[str, _Record] = OrderedDict()
        self.slowdown = slowdown or GlobalSlowdown(clock=clock)

    def attempt(self, key: str, client: str) -> int:
        """Before checking a password: 0 (go on; counted as a failure until ``succeeded``),
        or whole seconds to wait, when ``key`` is locked or the global slow-down is on."""
        now = self._clock()
        with self._lock:  # one step, so concurrent guesses cannot pass the count together
            wait_s = self._locked_for_unlocked([key], now) or self.slowdown.take(client)
            if not wait_s:
                self._fail_unlocked(key, now)
            return wait_s

    def logged_in(self, key: str, client: str) -> None:
        """The password was right: clear ``key`` and trust ``client`` from now on."""
        self.succeeded([key])
        self.slowdown.trust(client)

    def locked_for(self, keys: Iterable[str]) -> int:
        """Whole seconds until every one of ``keys`` may try again (0: now)."""
        now = self._clock()
        with self._lock:
            return self._locked_for_unlocked(keys, now)

    def _locked_for_unlocked(self, keys: Iterable[str], now: float) -> int:
        waits = [r.locked_until - now for k in keys if (r := self._records.get(k))]
        return max([0, *(math.ceil(w) for w in waits if w > 0)])

    def failed(self, keys: Iterable[str]) -> None:
        now = self._clock()
        with self._lock:
            for key in keys:
                self._fail_unlocked(key, now)

    def _fail_unlocked(self, key: str, now: float) -> None:
        record = self._record(key)
        record.failures += 1
        if record.failures >= self.max_failures:
            lock_s = min(self.max_lock_s, self.lock_s * 2**record.lockouts)
            record.locked_until = now + lock_s
            record.lockouts += 1
            record.failures = 0
            logger.warning("login locked for %s s after repeated failures (%s)", lock_s, key)

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
