"""Keeps a still screen (idle, camera lost, first boot) on the sinks while no frames flow.

The pipeline writes nothing while the camera is gone, so the screen would
freeze on the last frame; ``ScreenFeed.show(image)`` writes ``image`` to
every started sink every ``period_s`` until ``hide()``, which returns only
once the feed thread has stopped, so it never writes alongside the pipeline.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from appliance.errors import MirrorError
from appliance.media.frames import Frame, Image
from appliance.media.sink_base import FrameSink

logger = logging.getLogger(__name__)

JOIN_TIMEOUT_S = 2.0


class ScreenFeed:
    """Shows one still image on ``sinks`` until hidden; a context manager that hides on exit."""

    def __init__(self, sinks: Sequence[FrameSink], period_s: float = 0.5) -> None:
        self.sinks = list(sinks)
        self.period_s = period_s
        self.frames_shown = 0
        self._image: Image | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def showing(self) -> bool:
        return self._thread is not None

    def show(self, image: Image) -> None:
        """Show ``image`` (replacing any screen shown) until ``hide()``."""
        with self._lock:
            self._image = image
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="screen-feed", daemon=True)
            self._thread.start()

    def hide(self) -> None:
        """Stop showing; returns when no further write can happen."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            thread.join(JOIN_TIMEOUT_S)

    def __enter__(self) -> ScreenFeed:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.hide()

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                image = self._image
            if image is not None:
                self._write_all(image)
            self._stop.wait(self.period_s)

    def _write_all(self, image: Image) -> None:
        frame = Frame(image=image.copy(), index=self.frames_shown, capture_ns=time.monotonic_ns())
        for sink in self.sinks:
            if not sink.started:
                continue
            try:
                sink.write(frame)
            except MirrorError as exc:
                logger.warning("screen feed: %r failed: %s", sink, exc)
        self.frames_shown += 1
