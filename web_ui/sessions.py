"""Server-side logins: the signed session cookie carries a random id that must be live here.

Flask's cookie alone cannot be taken back: a copy made before logging out
would work until it expires. So each login opens an id (``secrets``, 256
bits) kept in this process; ``logged_in`` needs the cookie's id to be open.
Logging out closes it, a password change closes every other one, and each
closes by itself after ``lifetime_s``. A restart closes all (everyone logs in
again). Memory is bounded: past ``max_sessions`` the oldest login is closed.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

logger = logging.getLogger(__name__)

ID_BYTES = 32


class SessionRegistry:
    """The open login ids and when each one ends."""

    def __init__(
        self,
        lifetime_s: float,
        max_sessions: int = 32,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lifetime_s = lifetime_s
        self.max_sessions = max_sessions
        self._clock = clock
        self._lock = threading.Lock()
        self._open: OrderedDict[str, float] = OrderedDict()

    def open(self) -> str:
        """A new login id, live for ``lifetime_s``."""
        sid = secrets.token_urlsafe(ID_BYTES)
        with self._lock:
            self._open[sid] = self._clock() + self.lifetime_s
            while len(self._open) > self.max_sessions:
                self._open.popitem(last=False)
                logger.info("oldest admin login closed: more than %s open", self.max_sessions)
        return sid

    def alive(self, sid: object) -> bool:
        if not isinstance(sid, str):
            return False
        now = self._clock()
        with self._lock:
            until = self._open.get(sid)
            if until is not None and until <= now:
                del self._open[sid]
                until = None
        return until is not None

    def close(self, sid: object) -> None:
        if isinstance(sid, str):
            with self._lock:
                self._open.pop(sid, None)

    def close_all(self) -> int:
        """Close every login (a password change); returns how many were open."""
        with self._lock:
            count = len(self._open)
            self._open.clear()
        return count

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)
