"""A bounded in-memory log for the admin UI's logs page: warnings and errors, security events.

Two rings: the last ``capacity`` records at ``level`` or above, and, apart
from them, the last ``security_capacity`` security events (records logged
with ``extra={SECURITY_EVENT: True}``, from INFO up: logins, wrong
passwords, lock-outs). A flood of other warnings (requests from anyone on
the LAN) so never evicts a security event. Each message is one line with
its control characters escaped (``appliance.log_text``): a ``%0A`` in a
request path cannot make an entry that reads like another.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass

from appliance.log_text import escape_controls

logger = logging.getLogger(__name__)

DEFAULT_CAPACITY = 200
SECURITY_CAPACITY = 500
MAX_MESSAGE_CHARS = 1000
SECURITY_EVENT = "security_event"  # the LogRecord attribute that marks a security event


@dataclass(frozen=True)
class LogEntry:
    """One record: when (unix seconds), its level name, the logger and the one-line message."""

    at_unix: float
    level: str
    logger: str
    message: str
    security: bool = False


class LogBuffer(logging.Handler):
    """Keeps recent warnings and, apart, recent security events; never raises from ``emit``."""

    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        level: int = logging.WARNING,
        *,
        security_capacity: int = SECURITY_CAPACITY,
    ) -> None:
        super().__init__(min(level, logging.INFO))
        self.general_level = level
        self._entries: deque[LogEntry] = deque(maxlen=capacity)
        self._security: deque[LogEntry] = deque(maxlen=security_capacity)
        self._entries_lock = threading.Lock()
        self._attached: list[logging.Logger] = []

    def emit(self, record: logging.LogRecord) -> None:
        security = bool(getattr(record, SECURITY_EVENT, False))
        if not security and record.levelno < self.general_level:
            return
        try:
            message = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                exc = record.exc_info[1]
                message = f"{message} ({type(exc).__name__}: {exc})"
            message = escape_controls(message)[:MAX_MESSAGE_CHARS]
            entry = LogEntry(record.created, record.levelname, record.name, message, security)
        except Exception:
            self.handleError(record)
            return
        with self._entries_lock:
            (self._security if security else self._entries).append(entry)

    def entries(self) -> list[LogEntry]:
        """Both rings, newest first (``security`` tells the security events)."""
        with self._entries_lock:
            both = [*self._entries, *self._security]
        return sorted(both, key=lambda entry: entry.at_unix, reverse=True)

    def attach(self, target: logging.Logger | None = None) -> None:
        """Collect the records of ``target`` (default: the root logger)."""
        target = target or logging.getLogger()
        target.addHandler(self)
        self._attached.append(target)

    def detach(self) -> None:
        for target in self._attached:
            target.removeHandler(self)
        self._attached.clear()
