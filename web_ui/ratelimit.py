"""Login rate limiting: per client address, whatever user name it tries, longer each time.

``max_failures`` wrong passwords from one address lock that address out for
``lock_s``, doubling up to ``max_lock_s``; the user name plays no part, so an
address cannot rotate names to get more guesses. An IPv6 client counts by
its full address (``web_ui.client_keys``), so one host never locks out its
whole /64; the /64 as a whole, which one host can fill with addresses, is
locked after ``network_failures`` (a larger budget). Behind the locks, the
``GlobalSlowdown`` bounds a spray from many addresses while keeping each
address a share of its own. An address that logged in here
(``TrustedClients``, kept across restarts) has only its own lock-out.

``attempt`` counts a check before the password is compared (so concurrent
guesses cannot slip past the count) and a right password takes it back.
Memory is bounded: the oldest unlocked records go first, so flooding a table
with new keys does not free a locked one.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from web_ui import audit
from web_ui.client_keys import ClientKey
from web_ui.slowdown import GlobalSlowdown
from web_ui.trusted_clients import TrustedClients

logger = logging.getLogger(__name__)

NETWORK_HOSTS = 4  # a /64 may fail as often as this many single addresses before it is locked


@dataclass
class _Record:
    failures: int = 0
    lockouts: int = 0
    locked_until: float = 0.0


class LockTable:
    """``max_failures`` failures lock a key for ``lock_s``, doubling up to ``max_lock_s``.

    Not thread-safe on its own: ``LoginLimiter`` calls it under its lock.
    """

    def __init__(
        self,
        max_failures: int,
        lock_s: float,
        max_lock_s: float,
        *,
        max_keys: int = 4096,
        what: str = "address",
    ) -> None:
        self.max_failures = max_failures
        self.lock_s = lock_s
        self.max_lock_s = max_lock_s
        self.max_keys = max_keys
        self.what = what
        self._records: OrderedDict[str, _Record] = OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, key: object) -> bool:
        return key in self._records

    def locked_for(self, key: str, now: float) -> int:
        """Whole seconds until ``key`` may try again (0: now)."""
        record = self._records.get(key)
        return max(0, math.ceil(record.locked_until - now)) if record else 0

    def fail(self, key: str, now: float) -> None:
        record = self._records.pop(key, None) or _Record()
        self._records[key] = record
        if len(self._records) > self.max_keys:
            self._evict(now)
        record.failures += 1
        if record.failures >= self.max_failures:
            lock_s = min(self.max_lock_s, self.lock_s * 2**record.lockouts)
            record.locked_until = now + lock_s
            record.lockouts += 1
            record.failures = 0
            audit.warning(
                "logins from %s %s locked for %g s after %s wrong passwords",
                self.what,
                key,
                lock_s,
                self.max_failures,
            )

    def forgive(self, key: str) -> None:
        """Take back one failure (counted before a password that then was right)."""
        record = self._records.get(key)
        if record is not None and record.failures > 0:
            record.failures -= 1

    def clear(self, key: str) -> None:
        self._records.pop(key, None)

    def _evict(self, now: float) -> None:
        """Drop the oldest record that is not locked (the oldest of all if every one is)."""
        for key, record in self._records.items():
            if record.locked_until <= now:
                del self._records[key]
                return
        self._records.popitem(last=False)


class LoginLimiter:
    """The lock-outs per address and per IPv6 /64, the slow-down, and the trusted addresses."""

    def __init__(
        self,
        max_failures: int = 5,
        lock_s: float = 60.0,
        max_lock_s: float = 3600.0,
        *,
        network_failures: int | None = None,
        max_keys: int = 4096,
        clock: Callable[[], float] = time.monotonic,
        slowdown: GlobalSlowdown | None = None,
        trusted: TrustedClients | None = None,
    ) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.addresses = LockTable(max_failures, lock_s, max_lock_s, max_keys=max_keys)
        network_failures = network_failures or max_failures * NETWORK_HOSTS
        self.networks = LockTable(
            network_failures, lock_s, max_lock_s, max_keys=max_keys, what="network"
        )
        self.slowdown = slowdown or GlobalSlowdown(clock=clock)
        self.trusted = trusted if trusted is not None else TrustedClients()

    def attempt(self, client: ClientKey) -> int:
        """Before checking a password: 0 (go on; counted as a failure until it proves right),
        or whole seconds to wait, when ``client`` is locked or slowed down."""
        trusted = client.address in self.trusted
        now = self._clock()
        with self._lock:  # one step, so concurrent guesses cannot pass the count together
            wait_s = self._locked_for_unlocked(client, trusted, now)
            if not wait_s and not trusted:
                wait_s = self.slowdown.take(client.address)
            if not wait_s:
                self.addresses.fail(client.address, now)
                if client.shares_network and not trusted:
                    self.networks.fail(client.network, now)
            return wait_s

    def locked_for(self, client: ClientKey) -> int:
        """Whole seconds until ``client`` may try again (0: now)."""
        trusted = client.address in self.trusted
        with self._lock:
            return self._locked_for_unlocked(client, trusted, self._clock())

    def _locked_for_unlocked(self, client: ClientKey, trusted: bool, now: float) -> int:
        wait_s = self.addresses.locked_for(client.address, now)
        if client.shares_network and not trusted:
            wait_s = max(wait_s, self.networks.locked_for(client.network, now))
        return wait_s

    def right_password(self, client: ClientKey) -> None:
        """The password checked after ``attempt`` was right: it was no failure."""
        trusted = client.address in self.trusted
        with self._lock:
            self.addresses.clear(client.address)
            if client.shares_network and not trusted:
                self.networks.forgive(client.network)

    def logged_in(self, client: ClientKey) -> None:
        """The password was right: clear ``client`` and trust its address from now on."""
        self.right_password(client)
        self.trusted.trust(client.address)
