"""The slow-down behind the per-address lock-out: a share of checks for each address, then a pool.

Each password check from an address that has not logged in here (the
limiter does not ask for trusted ones) first takes a place in that
address's own share: ``share`` checks per ``window_s``, which checks from
other addresses cannot use up. So a spray, from one address or from many,
never refuses the right password typed on a new phone or laptop. Beyond its
share, an address takes a place in one pool of ``max_checks`` per
``window_s`` shared by all addresses; when that pool is full it waits until
its own share or the pool has room again. A guessing attack from ``n``
addresses so gets at most ``n * share + max_checks`` checks per window (and
each address is locked out after its own few failures; an IPv6 /64 after a
few more, so a host cannot make up ``n`` from its own /64).

Memory is bounded: at most ``max_addresses`` addresses hold a share at once
(one whose checks all left the window is forgotten); while that many hold
one, a new address goes straight to the pool.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from web_ui import audit

logger = logging.getLogger(__name__)


class GlobalSlowdown:
    """``share`` checks per address, then at most ``max_checks`` from all, per ``window_s``."""

    def __init__(
        self,
        max_checks: int = 30,
        window_s: float = 60.0,
        *,
        share: int = 2,
        max_addresses: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_checks = max_checks
        self.window_s = window_s
        self.share = share
        self.max_addresses = max_addresses
        self._clock = clock
        self._lock = threading.Lock()
        self._pool: deque[float] = deque(maxlen=max_checks)
        self._shares: OrderedDict[str, deque[float]] = OrderedDict()
        self._warned_at = -math.inf

    def take(self, address: str) -> int:
        """Take a place for one check from ``address``: 0, or whole seconds to wait instead."""
        now = self._clock()
        with self._lock:
            self._forget_before(now - self.window_s)
            own = self._shares.get(address)
            while own and own[0] <= now - self.window_s:
                own.popleft()
            if own is None and len(self._shares) < self.max_addresses and self.share > 0:
                own = self._shares[address] = deque(maxlen=self.share)
            if own is not None and len(own) < self.share:
                own.append(now)
                self._shares.move_to_end(address)
                return 0
            if len(self._pool) < self.max_checks:
                self._pool.append(now)
                return 0
            frees_at = [self._pool[0], *([own[0]] if own else [])]
            self._warn(address, now)
            return max(1, math.ceil(min(frees_at) + self.window_s - now))

    def _forget_before(self, start: float) -> None:
        while self._pool and self._pool[0] <= start:
            self._pool.popleft()
        # shares are kept least recently used first: stop at the first one still in the window
        while self._shares:
            address, own = next(iter(self._shares.items()))
            while own and own[0] <= start:
                own.popleft()
            if own:
                break
            del self._shares[address]

    def _warn(self, address: str, now: float) -> None:
        if now - self._warned_at >= self.window_s:
            self._warned_at = now
            audit.warning(
                "password checks slowed down (first refused: %s): more than %s in %g s "
                "beyond each address's own %s",
                address,
                self.max_checks,
                self.window_s,
                self.share,
            )
