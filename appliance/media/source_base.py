"""The frame source base class: started, read frame by frame, stopped, closed."""

from __future__ import annotations

import logging
import time

import cv2
import numpy as np

from appliance.errors import SourceError
from appliance.media.frames import Frame, Image
from appliance.running import Lifecycle

logger = logging.getLogger(__name__)


class FrameTimeoutError(SourceError, TimeoutError):
    """No frame became available within the ``timeout_s`` given to ``read()``."""


class FrameSource(Lifecycle):
    """A source of BGR frames with increasing ``index`` and ``capture_ns``.

    ``size`` is (width, height) and ``fps`` the nominal frame rate; both are
    the best knowledge before ``start()`` and the actual values after it.
    ``read()`` returns the next frame, or None at the end of the stream, and
    raises ``FrameTimeoutError`` when no frame came within ``timeout_s``.
    """

    def __init__(self, size: tuple[int, int], fps: float) -> None:
        super().__init__()
        self.size = size
        self.fps = fps
        self._next_index = 0

    def read(self, timeout_s: float | None = None) -> Frame | None:
        """The next frame; None at the end of the stream."""
        self._require_started("read")
        return self._read(timeout_s)

    def __iter__(self) -> FrameSource:
        return self

    def __next__(self) -> Frame:
        frame = self.read()
        if frame is None:
            raise StopIteration
        return frame

    def _read(self, timeout_s: float | None) -> Frame | None:
        raise NotImplementedError

    def _make_frame(self, image: Image, encoded: bytes | Image | None = None) -> Frame:
        """Stamp a captured image (decoded from ``encoded``, a JPEG, if given) with the
        next index and the capture time."""
        frame = Frame(image, self._next_index, time.monotonic_ns(), encoded=encoded)
        self._next_index += 1
        return frame


def as_bgr(image: np.ndarray) -> Image:
    """An HxWx3 uint8 BGR image from what a capture returned (gray, BGRA or BGR)."""
    if image.dtype != np.uint8:
        raise SourceError(f"frame has dtype {image.dtype}, expected uint8")
    if image.ndim == 2:
        return cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)  # type: ignore[return-value]
    if image.ndim == 3 and image.shape[2] == 4:
        return cv2.cvtColor(image, cv2.COLOR_BGRA2BGR)  # type: ignore[return-value]
    if image.ndim == 3 and image.shape[2] == 3:
        return image
    raise SourceError(f"frame has shape {image.shape}, expected HxWx3 BGR")
