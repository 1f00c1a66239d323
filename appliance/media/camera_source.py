"""Frames from a V4L2 camera (a USB webcam or a CSI camera behind a V4L2 driver).

Nothing is opened until ``start()``. The capture object comes from an
injectable factory so tests can stand in a fake device.

A camera that stops delivering (unplugged, driver reset) is released and the
read raises ``SourceError``; every later read tries to open it again and
raises ``SourceError`` while it is still gone, so the caller's back-off
paces the attempts (the pipeline's capture thread backs off up to a second).
The first frame after reopening ends the gap.

A camera that stalls (still there, but no frame comes) counts as lost too:
OpenCV's V4L2 backend waits ``OPENCV_VIDEOIO_V4L_SELECT_TIMEOUT`` seconds
for a frame (10 by default, set to 1 here unless the environment sets it),
a failed read within ``stall_s`` of the last frame is a timeout, and after
``stall_s`` without a frame the capture is released and opened again.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import cv2

from appliance.errors import ConfigError, SourceError
from appliance.media.frames import Frame
from appliance.media.jpeg import is_jpeg
from appliance.media.jpeg_halves import HalvesDecoder
from appliance.media.source_base import FrameSource, FrameTimeoutError, as_bgr
from appliance.timing import add_stage_ms

logger = logging.getLogger(__name__)

_VIDEO_NODE = re.compile(r"^/dev/video(\d+)$")

STALL_S = 2.0  # no frame for this long: the camera counts as lost and is opened again
# OpenCV's V4L2 backend reads this once, at the first frame: a stalled camera's read then
# returns after 1 s instead of 10 (and a stop is never held up longer than that).
os.environ.setdefault("OPENCV_VIDEOIO_V4L_SELECT_TIMEOUT", "1")


class CaptureLike(Protocol):
    """The part of ``cv2.VideoCapture`` a camera source uses."""

    def isOpened(self) -> bool: ...  # noqa: N802 (OpenCV's name)

    def read(self) -> tuple[bool, Any]: ...

    def set(self, prop_id: int, value: float, /) -> bool: ...

    def get(self, prop_id: int, /) -> float: ...

    def release(self) -> None: ...


CaptureFactory = Callable[[int | str, int], CaptureLike]


def default_capture_factory(device: int | str, api_preference: int) -> CaptureLike:
    """A real ``cv2.VideoCapture`` on ``device`` with the given backend."""
    return cv2.VideoCapture(device, api_preference)


def parse_device(device: int | str) -> int | str:
    """An index for ``0``/``"0"``, the path itself for ``/dev/video0`` and the like."""
    if isinstance(device, int):
        return device
    text = device.strip()
    return int(text) if text.isdigit() else text


def device_name(device: int | str) -> str:
    return f"/dev/video{device}" if isinstance(device, int) else device


def device_index(device: int | str) -> int | str:
    """The V4L2 index to open: OpenCV's V4L2 backend opens by index, not by path.

    ``/dev/videoN`` and links to it (``/dev/v4l/by-id/...``) give ``N``;
    anything else is passed on unchanged.
    """
    if isinstance(device, int):
        return device
    match = _VIDEO_NODE.match(os.path.realpath(device)) or _VIDEO_NODE.match(device)
    return int(match.group(1)) if match else device


def _backend() -> int:
    return int(cv2.CAP_V4L2) if sys.platform.startswith("linux") else int(cv2.CAP_ANY)


def _fourcc_code(fourcc: str) -> int:
    if len(fourcc) != 4:
        raise ConfigError(f"camera FOURCC must be 4 characters, got {fourcc!r}")
    return int(cv2.VideoWriter.fourcc(*fourcc))


class CameraSource(FrameSource):
    """A V4L2 camera by index (``0``, ``"0"``) or device path (``"/dev/video0"``).

    The capture factory is called with the V4L2 index (see ``device_index``)
    and the backend (``cv2.CAP_V4L2`` on Linux).

    ``size``, ``fps`` and ``fourcc`` are requested at ``start()`` (with a one
    frame driver buffer, for the lowest latency); ``size`` and ``fps`` then
    hold what the driver granted. ``read(timeout_s)`` is best effort: the
    driver's own timeout bounds a read, a late failure is a timeout, and no
    frame for ``stall_s`` is a lost camera (released, opened again).

    An MJPG stream's frames come from the driver as JPEG bytes and are decoded
    by ``media.jpeg_halves`` (in two halves at once where the camera puts
    restart markers in them, as many do); a frame that does not decode is
    skipped (``damaged``).
    """

    def __init__(
        self,
        device: int | str,
        size: tuple[int, int] = (640, 480),
        fps: float = 30,
        fourcc: str = "MJPG",
        capture_factory: CaptureFactory = default_capture_factory,
        *,
        stall_s: float = STALL_S,
    ) -> None:
        super().__init__(size=(int(size[0]), int(size[1])), fps=float(fps))
        self.stall_s = stall_s
        self._last_frame_at = 0.0
        self.device = parse_device(device)
        self.name = device_name(self.device)
        self.fourcc = fourcc
        self._fourcc_code = _fourcc_code(fourcc)
        self._factory = capture_factory
        self._cap: CaptureLike | None = None
        self._cap_lock = threading.Lock()
        self.reconnects = 0  # times the camera was opened again after it was lost
        self.damaged = 0  # frames that did not decode (skipped)
        self.decoder = HalvesDecoder("capture-jpeg")

    def __repr__(self) -> str:
        return f"CameraSource({self.name!r})"

    def _on_start(self) -> None:
        self.decoder = HalvesDecoder("capture-jpeg")
        cap = self._open()
        with self._cap_lock:
            self._cap = cap

    def _open(self) -> CaptureLike:
        if self._factory is default_capture_factory and self._node_missing():
            raise SourceError(self._open_failure())  # OpenCV would only log a warning
        cap = self._factory(device_index(self.device), _backend())
        if not cap.isOpened():
            cap.release()
            raise SourceError(self._open_failure())
        self._configure(cap)
        self._last_frame_at = time.monotonic()  # the stall clock starts at opening
        return cap

    def _node_missing(self) -> bool:
        linux = sys.platform.startswith("linux")
        return linux and self.name.startswith("/dev/") and not Path(self.name).exists()

    def _open_failure(self) -> str:
        if sys.platform.startswith("linux") and not Path(self.name).exists():
            return f"camera {self.name} not found (is it plugged in?)"
        return f"camera {self.name} cannot be opened (busy, or not a capture device?)"

    def _configure(self, cap: CaptureLike) -> None:
        width, height = self.size
        cap.set(cv2.CAP_PROP_FOURCC, self._fourcc_code)
        cap.set(cv2.CAP_PROP_FRAME_WIDTH, width)
        cap.set(cv2.CAP_PROP_FRAME_HEIGHT, height)
        cap.set(cv2.CAP_PROP_FPS, self.fps)
        cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)
        granted = (int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT)))
        granted_fps = cap.get(cv2.CAP_PROP_FPS)
        if min(granted) > 0 and granted != self.size:
            logger.warning("%s: asked for %sx%s, got %sx%s", self.name, *self.size, *granted)
            self.size = granted
        if granted_fps > 0 and abs(granted_fps - self.fps) > 0.5:
            logger.warning("%s: asked for %s fps, got %s fps", self.name, self.fps, granted_fps)
            self.fps = float(granted_fps)
        # an MJPG stream's JPEGs are decoded here (``media.jpeg``: twice as fast as the
        # backend's own decode); a backend that keeps converting sends pixels, used as they are
        if self.fourcc == "MJPG" and int(cap.get(cv2.CAP_PROP_FOURCC)) == self._fourcc_code:
            cap.set(cv2.CAP_PROP_CONVERT_RGB, 0)
        logger.info("%s: %sx%s @ %s fps (%s)", self.name, *self.size, self.fps, self.fourcc)

    def _on_stop(self) -> None:
        with self._cap_lock:
            cap, self._cap = self._cap, None
        if cap is not None:
            cap.release()
        self.decoder.close()

    def _read(self, timeout_s: float | None) -> Frame | None:
        began = time.monotonic()
        with self._cap_lock:
            if not self.started:
                return None  # stopped by another thread
            cap = self._cap if self._cap is not None else self._reopen()
            while True:
                ok, image = cap.read()
                now = time.monotonic()
                if not ok or image is None or image.size == 0:
                    break
                encoded = image if is_jpeg(image) else None  # a new array every read
                start = time.perf_counter()
                pixels = image if encoded is None else self.decoder.decode(encoded)
                if pixels is not None:
                    self._last_frame_at = now
                    frame = self._make_frame(as_bgr(pixels), encoded)
                    if encoded is not None:
                        add_stage_ms(frame.timings_ms, "decode", start)
                    return frame
                self.damaged += 1  # skipped; a camera sending only these stalls
                if self.damaged % 100 == 1:
                    logger.warning(
                        "camera %s: a frame did not decode; skipped (%d so far)",
                        self.name,
                        self.damaged,
                    )
                if now - self._last_frame_at >= self.stall_s:
                    break
            stalled = now - self._last_frame_at >= self.stall_s
            if not stalled and timeout_s is not None and now - began >= timeout_s:
                raise FrameTimeoutError(f"camera {self.name}: no frame within {timeout_s} s")
            self._cap = None
        cap.release()
        if stalled:
            logger.warning("camera %s: no frame for %.1f s; reopening", self.name, self.stall_s)
            raise SourceError(f"camera {self.name} stalled: no frame for {self.stall_s:g} s")
        logger.warning("camera %s stopped delivering frames; reconnecting", self.name)
        raise SourceError(f"camera {self.name} stopped delivering frames (unplugged?)")

    def _reopen(self) -> CaptureLike:
        """Open the lost camera again (called with the lock held); raises while it is gone."""
        cap = self._open()
        self._cap = cap
        self.reconnects += 1
        logger.info("camera %s reconnected", self.name)
        return cap
