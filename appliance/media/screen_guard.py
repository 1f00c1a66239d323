"""The HDMI screen as a part that may be missing: it never stops the mirror, and is retried.

A screen can be absent at start (no ``/dev/fb0`` yet, nothing plugged in),
unusable (no permission, a Jetson booted into its desktop where KMSDRM cannot
get DRM master, pygame not installed) or fail later (unplugged, a driver
replaced). ``ScreenGuard`` wraps the way to open it (``opener``: builds a
sink and raises ``MirrorError`` when there is none to use): its ``start()``
never raises; a failure is logged once per reason and kept in ``problem``
until a frame is shown again, and the screen is tried again every ``retry_s``
seconds from ``write()``, so a screen plugged in later, or DRM master freed
when the desktop stops, is picked up. Frames written while there
is no screen are dropped but counted (``frames_written``): the mirror's
heartbeat follows the frames that flow, not the screen's health, which
``/healthz`` and the dashboard report from ``problem``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from appliance.errors import MirrorError
from appliance.media.frames import Frame
from appliance.media.sink_base import FrameSink

logger = logging.getLogger(__name__)

RETRY_S = 2.0  # how often a missing or failed screen is tried again


class ScreenGuard(FrameSink):
    """Shows frames on the screen ``opener`` opens, while there is one; never raises for it."""

    def __init__(
        self,
        opener: Callable[[], FrameSink],
        what: str,
        *,
        retry_s: float = RETRY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.what = what  # the screen in words ("framebuffer /dev/fb0", "SDL display")
        self.retry_s = retry_s
        self.opened = 0  # times a screen was opened
        self._opener = opener
        self._clock = clock
        self._lock = threading.Lock()  # the pipeline's and the screen feed's writes, stop()
        self._screen: FrameSink | None = None
        self._problem = ""
        self._next_try = 0.0
        self._said: set[str] = set()  # problems already logged (each is logged once)
        self._traced: set[str] = set()  # unexpected exception kinds already logged in full

    def __repr__(self) -> str:
        return f"ScreenGuard({self._screen if self._screen is not None else self.what!r})"

    @property
    def problem(self) -> str:
        return self._problem

    @property
    def screen(self) -> FrameSink | None:
        """The sink showing frames now; None while there is no screen."""
        return self._screen

    def _on_start(self) -> None:
        with self._lock:
            self._next_try = 0.0
            self._try_open()

    def _write(self, frame: Frame) -> None:
        with self._lock:
            screen = self._screen
            if screen is None:
                if self._clock() < self._next_try:
                    return
                screen = self._try_open()
                if screen is None:
                    return
            try:
                screen.write(frame)
            except Exception as exc:  # the screen's failure, never the mirror's
                self._screen = None
                self._quietly_close(screen)
                self._failed(f"{self.what} failed: {_reason(exc)}", exc)
                return
            if self._problem:  # the first frame shown again
                logger.info("screen back: %r shows the mirror (was: %s)", screen, self._problem)
                self._problem = ""

    def _on_stop(self) -> None:
        with self._lock:
            screen, self._screen = self._screen, None
            if screen is not None:
                self._quietly_close(screen)

    def _try_open(self) -> FrameSink | None:
        screen: FrameSink | None = None
        try:
            screen = self._opener()
            screen.start()
        except Exception as exc:  # any screen that cannot start: reported, tried again later
            if screen is not None:
                self._quietly_close(screen)
            self._failed(_reason(exc), exc)
            return None
        self._screen = screen
        self.opened += 1
        return screen

    def _failed(self, problem: str, exc: Exception) -> None:
        self._next_try = self._clock() + self.retry_s
        self._problem = problem
        if problem in self._said:
            logger.debug("screen: %s (again)", problem)
            return
        self._said.add(problem)
        kind = type(exc).__name__
        unexpected = not isinstance(exc, MirrorError) and kind not in self._traced
        self._traced.add(kind)
        logger.warning(
            "screen: %s; the mirror runs on without it (headless), trying again every %g s",
            problem,
            self.retry_s,
            exc_info=exc if unexpected else None,
        )

    @staticmethod
    def _quietly_close(screen: FrameSink) -> None:
        try:
            screen.close()
        except Exception as exc:
            logger.warning("closing the screen %r failed: %s", screen, exc)


def _reason(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text if isinstance(exc, MirrorError) else f"{type(exc).__name__}: {text}"
