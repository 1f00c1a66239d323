"""One lifecycle for everything that runs or holds resources.

Frame sources and sinks, the preview server, the pipeline runner, the
thermal governor, the GPIO panel and the admin web server all build on
``Lifecycle`` (modelled on gpiozero's ``GPIOBase``): public ``start()``,
``stop()`` and ``close()`` check the state and call the hooks at most once
per transition, ``close()`` is idempotent, ``closed`` says whether it was
closed, and ``with thing:`` starts it and closes it at the end.

- ``start()`` on a started object does nothing; ``start()`` after
  ``close()`` raises ``RuntimeError`` (a programming error).
- ``stop(timeout_s)`` runs ``_on_stop`` (ask: set events, close slots) when
  started, then ``_join`` (wait up to ``timeout_s`` for what was asked to
  end) on every call, so a second ``stop()`` waits again; it returns True
  when everything ended in time.
- ``restartable`` (a class flag): True (sources, sinks, servers) lets
  ``start()`` follow ``stop()``; False (the runner, the governor) makes the
  object run once: a second ``start()`` raises, even after a failed one,
  and ``stop()`` also closes it.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType
from typing import ClassVar

from typing_extensions import Self

logger = logging.getLogger(__name__)


class Lifecycle:
    """A resource that is started, stopped (and, if ``restartable``, restarted) and closed."""

    restartable: ClassVar[bool] = True
    stop_timeout_s: ClassVar[float] = 2.0  # stop()'s default wait for ``_join``

    def __init__(self) -> None:
        self._state_lock = threading.RLock()
        self._started = False
        self._begun = False  # start() was called (successfully or not)
        self._closed = False

    @property
    def started(self) -> bool:
        return self._started

    @property
    def closed(self) -> bool:
        return self._closed

    def start(self) -> None:
        """Acquire the resource; a no-op when already started (a one-shot raises)."""
        with self._state_lock:
            if self._begun and not self.restartable:
                raise RuntimeError(f"{self!r} runs once; build a new {type(self).__name__}")
            if self._closed:
                raise RuntimeError(f"{self!r} is closed and cannot be started again")
            if self._started:
                return
            self._begun = True
            self._on_start()
            self._started = True
            logger.debug("%r started", self)

    def stop(self, timeout_s: float | None = None) -> bool:
        """Release what ``start()`` acquired; True when it ended within ``timeout_s``."""
        with self._state_lock:
            if self._started:
                self._started = False
                self._on_stop()
                logger.debug("%r stopped", self)
            joined = self._join(self.stop_timeout_s if timeout_s is None else timeout_s)
            if not self.restartable:
                self._close_once()
            return joined

    def close(self) -> None:
        """Stop and release everything for good; idempotent."""
        with self._state_lock:
            if self._closed:
                return
            try:
                self.stop()
            finally:
                self._close_once()

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

    def _close_once(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._on_close()

    def _require_started(self, action: str) -> None:
        if not self._started:
            state = "closed" if self._closed else "not started"
            raise RuntimeError(f"cannot {action}: {self!r} is {state}; call start() first")

    def _on_start(self) -> None:
        """Hook: acquire resources. Raise a MirrorError leaf on failure."""

    def _on_stop(self) -> None:
        """Hook: release what ``_on_start`` acquired, or ask its threads to end."""

    def _join(self, timeout_s: float) -> bool:
        """Hook (every ``stop()``): wait up to ``timeout_s`` for what ``_on_stop`` asked
        to end; True when it has."""
        return True

    def _on_close(self) -> None:
        """Hook: release what the constructor acquired."""
