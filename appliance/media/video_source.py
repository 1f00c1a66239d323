"""Frames from a video file, at the file's own frame rate or as fast as they decode."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import cv2

from appliance.errors import SourceError
from appliance.media.frames import Frame, Image
from appliance.media.pacing import Pacer
from appliance.media.source_base import FrameSource, FrameTimeoutError, as_bgr

logger = logging.getLogger(__name__)

DEFAULT_FPS = 25.0  # for files that do not state a usable frame rate


def _check_file(path: Path) -> None:
    if not path.exists():
        raise SourceError(f"video file {path} does not exist")
    if not path.is_file():
        raise SourceError(f"video file {path} is not a regular file")


def _open(path: Path) -> cv2.VideoCapture:
    cap = cv2.VideoCapture(str(path), cv2.CAP_FFMPEG)
    if not cap.isOpened():
        cap.release()
        raise SourceError(f"video file {path} cannot be opened (not a video or unsupported codec)")
    return cap


def _probe(path: Path) -> tuple[tuple[int, int], float]:
    """Size and frame rate of the file, after checking it decodes at least one frame."""
    cap = _open(path)
    try:
        ok, image = cap.read()
        fps = cap.get(cv2.CAP_PROP_FPS)
    finally:
        cap.release()
    if not ok or image is None or image.size == 0:
        raise SourceError(f"video file {path} has no frames that can be decoded")
    height, width = image.shape[:2]
    if not 0 < fps < 1000:
        logger.warning("%s: frame rate %s is unusable; assuming %s fps", path, fps, DEFAULT_FPS)
        fps = DEFAULT_FPS
    return (int(width), int(height)), float(fps)


def frame_count(path: Path) -> int | None:
    """The frame count the file states (for progress), or None when it states none."""
    cap = cv2.VideoCapture(str(path))
    try:
        count = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
    finally:
        cap.release()
    return count if count > 0 else None


class VideoFileSource(FrameSource):
    """Plays a video file once (or forever with ``loop``) as a frame source.

    The file is checked when constructed: a missing path, something that is
    not a file, a file OpenCV cannot open or one without a decodable frame
    raise ``SourceError``. Each ``start()`` plays from the beginning.
    """

    def __init__(self, path: str | Path, paced: bool = True, loop: bool = False) -> None:
        self.path = Path(path)
        _check_file(self.path)
        size, fps = _probe(self.path)
        super().__init__(size=size, fps=fps)
        self.paced = paced
        self.loop = loop
        self._pacer = Pacer(fps)
        self._cap: cv2.VideoCapture | None = None
        self._cap_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"VideoFileSource({str(self.path)!r})"

    def _on_start(self) -> None:
        cap = _open(self.path)
        with self._cap_lock:
            self._cap = cap
        self._pacer.reset()

    def _on_stop(self) -> None:
        with self._cap_lock:
            cap, self._cap = self._cap, None
        if cap is not None:
            cap.release()

    def _read(self, timeout_s: float | None) -> Frame | None:
        if self.paced:
            if not self._pacer.wait(timeout_s):
                raise FrameTimeoutError(f"{self!r}: no frame due within {timeout_s} s")
            self._pacer.mark()
        with self._cap_lock:
            image = self._decode_next()
        return None if image is None else self._make_frame(image)

    def _decode_next(self) -> Image | None:
        """The next decoded image (rewinding once when looping); None at the end."""
        if self._cap is None:
            return None  # stopped by another thread
        ok, image = self._cap.read()
        if not ok and self.loop:
            logger.debug("%s: end of file, looping", self.path)
            self._cap.release()
            self._cap = _open(self.path)
            ok, image = self._cap.read()
            if not ok:
                raise SourceError(f"video file {self.path} stopped decoding when looping")
        return as_bgr(image) if ok else None
