"""The frame sink base class: started, written frame by frame, stopped, closed."""

from __future__ import annotations

import logging

from appliance.media.frames import Frame
from appliance.running import Lifecycle

logger = logging.getLogger(__name__)


class FrameSink(Lifecycle):
    """Consumes frames. ``write()`` before ``start()`` or after ``close()`` is an error."""

    def __init__(self) -> None:
        super().__init__()
        self.frames_written = 0

    @property
    def problem(self) -> str:
        """Why the sink cannot show frames now ("" when it can): a screen that is missing,
        busy or was unplugged says so here while the mirror runs on without it."""
        return ""

    def write(self, frame: Frame) -> None:
        """Hand one frame to the sink."""
        self._require_started("write")
        self._write(frame)
        self.frames_written += 1

    def _write(self, frame: Frame) -> None:
        raise NotImplementedError
