"""Write frames to an mp4 file (MPEG-4 part 2, ``mp4v``) with OpenCV."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import cv2

from appliance.errors import ConfigError, OutputError
from appliance.media.sink_base import FrameSink
from appliance.pipeline.frames import Frame, Image

logger = logging.getLogger(__name__)

FOURCC = "mp4v"


def check_writable(path: Path) -> None:
    """Raise ``OutputError`` unless ``path`` can be created or overwritten."""
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(
            f"cannot write {path}: cannot create {path.parent}: {exc.strerror or exc}"
        ) from exc
    existed = path.exists()
    try:
        with path.open("ab"):
            pass
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    if not existed:
        with contextlib.suppress(OSError):
            path.unlink()


def _fit(image: Image, size: tuple[int, int]) -> Image:
    if (image.shape[1], image.shape[0]) == size:
        return image
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)  # type: ignore[return-value]


class VideoFileSink(FrameSink):
    """Frames into an mp4 at ``fps``; ``size`` (w, h) from the first frame when None.

    Frames of another size are resized to it. ``start()`` checks the path is
    writable before any work and raises ``OutputError`` if not; a writer that
    cannot be opened raises ``OutputError`` too.
    """

    def __init__(self, path: str | Path, fps: float, size: tuple[int, int] | None = None) -> None:
        super().__init__()
        if not fps > 0:
            raise ConfigError(f"output frame rate must be > 0, got {fps}")
        if size is not None and min(size) <= 0:
            raise ConfigError(f"output size must be (width, height) > 0, got {size}")
        self.path = Path(path).expanduser()
        self.fps = float(fps)
        self.size = size
        self._writer: cv2.VideoWriter | None = None

    def __repr__(self) -> str:
        return f"VideoFileSink({str(self.path)!r})"

    def _on_start(self) -> None:
        check_writable(self.path)
        if self.size is not None:
            self._writer = self._open(self.size)

    def _open(self, size: tuple[int, int]) -> cv2.VideoWriter:
        fourcc = cv2.VideoWriter.fourcc(*FOURCC)
        writer = cv2.VideoWriter(str(self.path), fourcc, self.fps, size)
        if not writer.isOpened():
            writer.release()
            raise OutputError(
                f"cannot write {self.path}: OpenCV could not open an {FOURCC} video writer "
                f"for {size[0]}x{size[1]} @ {self.fps:g} fps"
            )
        logger.info("%s: writing %sx%s @ %s fps", self.path, size[0], size[1], self.fps)
        return writer

    def _write(self, frame: Frame) -> None:
        image = frame.image
        size = self.size
        if size is None:
            height, width = image.shape[:2]
            size = self.size = (int(width), int(height))
        if self._writer is None:
            self._writer = self._open(size)
        self._writer.write(_fit(image, size))

    def _on_stop(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.release()
            logger.info("%s: closed after %s frames", self.path, self.frames_written)
