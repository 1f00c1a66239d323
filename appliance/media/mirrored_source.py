"""A source whose frames are flipped left to right, as a mirror shows you.

The flip happens at capture, before detection, swapping and the AI label,
so everything drawn on the frame later (label, prompts, notices) reads the
right way round on the screen and in the preview.
"""

from __future__ import annotations

import logging

import cv2

from appliance.media.frames import Frame
from appliance.media.source_base import FrameSource

logger = logging.getLogger(__name__)


class MirroredSource(FrameSource):
    """Wraps another source; its start/stop are this one's, its frames flipped."""

    def __init__(self, inner: FrameSource) -> None:
        super().__init__(size=inner.size, fps=inner.fps)
        self.inner = inner

    def __repr__(self) -> str:
        return f"MirroredSource({self.inner!r})"

    @property
    def reconnects(self) -> int:
        return int(getattr(self.inner, "reconnects", 0))

    def _on_start(self) -> None:
        self.inner.start()
        self.size, self.fps = self.inner.size, self.inner.fps

    def _on_stop(self) -> None:
        self.inner.stop()

    def _on_close(self) -> None:
        self.inner.close()

    def _read(self, timeout_s: float | None) -> Frame | None:
        frame = self.inner.read(timeout_s)
        if frame is not None:
            frame.image = cv2.flip(frame.image, 1)  # type: ignore[assignment]
        return frame
