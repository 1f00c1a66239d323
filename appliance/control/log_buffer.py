"""A bounded in-memory log of recent warnings and errors, for the admin UI's logs page."""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass

logger = logging.getLogger(__name__)

DEFAULT_CAPACITY = 200
MAX_MESSAGE_CHARS = 1000


@dataclass(frozen=True)
class LogEntry:
    """One record: when (unix seconds), its level name, the logger and the one-line message."""

    at_unix: float
    level: str
    logger: str
    message: str


class LogBuffer(logging.Handler):
    """Keeps the last ``capacity`` records at ``level`` or above; never raises from ``emit``."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, level: int = logging.WARNING) -> None:
        super().__init__(level)
        self._entries: deque[LogEntry] = deque(maxlen=capacity)
        self._entries_lock = threading.Lock()
        self._attached: list[logging.Logger] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                exc = record.exc_info[1]
                message = f"{message} ({type(exc).__name__}: {exc})"
            message = " ".join(message.split())[:MAX_MESSAGE_CHARS]
            entry = LogEntry(record.created, record.levelname, record.name, message)
        except Exception:
            self.handleError(record)
            return
        with self._entries_lock:
            self._entries.append(entry)

    def entries(self) -> list[LogEntry]:
        """Newest first."""
        with self._entries_lock:
            return list(reversed(self._entries))

    def attach(self, target: logging.Logger | None = None) -> None:
        """Collect the records of ``target`` (default: the root logger)."""
        target = target or logging.getLogger()
        target.addHandler(self)
        self._attached.append(target)

    def detach(self) -> None:
        for target in self._attached:
            target.removeHandler(self)
        self._attached.clear()
