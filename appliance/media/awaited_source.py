"""A live camera the mirror waits for: missing at start is not fatal, it is opened when it appears.

A kiosk powers up before its USB camera enumerates, or staff plug the
camera in later. ``AwaitedSource`` wraps the camera source: ``start()``
tries to start it and, when that fails with ``SourceError`` (not found,
busy, the Picamera2 module unusable), logs the reason once and starts
anyway. Each ``read()`` while the camera is still missing tries to start
it again and raises the same ``SourceError``, so the capture thread marks
the camera lost (the camera-lost screen, ``/healthz`` 503 with the
reason) and backs off between attempts; the first frame ends the gap.
"""

from __future__ import annotations

import logging

from appliance.errors import SourceError
from appliance.media.frames import Frame
from appliance.media.source_base import FrameSource

logger = logging.getLogger(__name__)


class AwaitedSource(FrameSource):
    """Wraps a camera source; its start never fails for a missing camera, reads open it."""

    def __init__(self, inner: FrameSource) -> None:
        super().__init__(size=inner.size, fps=inner.fps)
        self.inner = inner
        self.missing = ""  # why the camera is not open yet ("" once it is)

    def __repr__(self) -> str:
        return f"AwaitedSource({self.inner!r})"

    @property
    def reconnects(self) -> int:
        return int(getattr(self.inner, "reconnects", 0))

    def _on_start(self) -> None:
        try:
            self._start_inner()
        except SourceError as exc:
            self.missing = str(exc)
            logger.warning("%s; starting without it and waiting for it to appear", exc)

    def _on_stop(self) -> None:
        self.inner.stop()

    def _on_close(self) -> None:
        self.inner.close()

    def _read(self, timeout_s: float | None) -> Frame | None:
        if not self.started:
            return None  # stopped by another thread
        if not self.inner.started:
            self._start_inner()  # raises SourceError while the camera is still missing
            logger.info("camera %r appeared", self.inner)
        return self.inner.read(timeout_s)

    def _start_inner(self) -> None:
        self.inner.start()
        self.size, self.fps = self.inner.size, self.inner.fps
        self.missing = ""
