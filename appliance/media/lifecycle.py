"""Start/stop/close bookkeeping shared by frame sources and sinks.

Public ``start()``, ``stop()`` and ``close()`` check the state and call the
``_on_start``/``_on_stop``/``_on_close`` hooks at most once per transition:
``start()`` on a started object and ``stop()``/``close()`` on a stopped or
closed one do nothing, ``start()`` after ``close()`` is a programming error.
Using the object as a context manager starts it and closes it on exit.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from typing_extensions import Self

logger = logging.getLogger(__name__)


class Lifecycle:
    """A resource that is started, stopped (and restartable) and finally closed."""

    def __init__(self) -> None:
        self._state_lock = threading.RLock()
        self._started = False
        self._closed = False

    @property
    def started(self) -> bool:
        return self._started

    @property
    def closed(self) -> bool:
        return self._closed

    def start(self) -> None:
        """Acquire the resource; a no-op when already started."""
        with self._state_lock:
            if self._closed:
                raise RuntimeError(f"{self!r} is closed and cannot be started again")
            if self._started:
                return
            self._on_start()
            self._started = True
            logger.debug("%r started", self)

    def stop(self) -> None:
        """Release what ``start()`` acquired; a no-op when not started."""
        with self._state_lock:
            if not self._started:
                return
            self._started = False
            self._on_stop()
            logger.debug("%r stopped", self)

    def close(self) -> None:
        """Stop and release everything for good; idempotent."""
        with self._state_lock:
            if self._closed:
                return
            try:
                self.stop()
            finally:
                self._closed = True
                self._on_close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _require_started(self, action: str) -> None:
        if not self._started:
            state = "closed" if self._closed else "not started"
            raise RuntimeError(f"cannot {action}: {self!r} is {state}; call start() first")

    def _on_start(self) -> None:
        """Hook: acquire resources. Raise a MirrorError leaf on failure."""

    def _on_stop(self) -> None:
        """Hook: release what ``_on_start`` acquired."""

    def _on_close(self) -> None:
        """Hook: release what the constructor acquired."""
