"""Write frames to an mp4 file (MPEG-4 part 2, ``mp4v``) with OpenCV.

OpenCV's writer reports no write errors (a full disk leaves a file without
its index, unplayable), so the frames go to a temporary file beside the
target; after the writer is closed that file is re-opened and its frame
count checked, and only then renamed over the target. A failure leaves the
old file (if any) untouched and no temporary file behind. The writer holds a
lock on its temporary file (:mod:`appliance.media.work_locks`); one that nobody
holds was left by a killed writer and is removed at the next start. ``mirror run
--output`` records with :mod:`appliance.media.recording_sink` instead (crash-safe).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import cv2

from appliance.errors import ConfigError, OutputError
from appliance.fileio import discard, publish, temp_beside
from appliance.media.frames import Frame, Image
from appliance.media.sink_base import FrameSink
from appliance.media.work_locks import abandoned, hold, release

logger = logging.getLogger(__name__)

FOURCC = "mp4v"


def check_writable(path: Path) -> None:
    """Raise ``OutputError`` unless ``path`` can be created or replaced (nothing is left);
    a name longer than the file system allows is one of the reasons."""
    try:
        if path.is_dir():
            raise OutputError(f"cannot write {path}: it is a directory")
        if path.parent.exists() and not path.parent.is_dir():
            raise OutputError(f"cannot write {path}: {path.parent} is not a directory")
    except OSError as exc:  # ENAMETOOLONG, EACCES...
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    discard(temp_beside(path))


def abandoned_temps(path: Path) -> list[Path]:
    """Temporary files of ``path`` (``.rec.k3j9x_2a.mp4``) left by a writer that was
    killed: unplayable (the index comes last) and held by nobody."""
    pattern = re.compile(re.escape(f".{path.stem}.") + r"[a-z0-9_]{8}" + re.escape(path.suffix))
    try:
        found = [p for p in path.parent.iterdir() if pattern.fullmatch(p.name)]
    except OSError:
        return []
    return [p for p in sorted(found) if p.is_file() and abandoned(p)]


def fit_frame(image: Image, size: tuple[int, int]) -> Image:
    """``image`` resized to ``size`` (w, h) when it has another size."""
    if (image.shape[1], image.shape[0]) == size:
        return image
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)  # type: ignore[return-value]


class VideoFileSink(FrameSink):
    """Frames into an mp4 at ``fps``; ``size`` (w, h) from the first frame when None.

    Frames of another size are resized to it. ``start()`` checks the path is
    writable before any work and raises ``OutputError`` if not; a writer that
    cannot be opened raises ``OutputError`` too. ``stop()`` finishes the file
    and puts it in place, or raises ``OutputError`` (the old file kept);
    ``discard()`` drops what was written instead.
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
        self._tmp: Path | None = None
        self._lock: int | None = None  # held on the temporary file while it is written
        self._written = 0  # frames in the temporary file

    def __repr__(self) -> str:
        return f"VideoFileSink({str(self.path)!r})"

    def _on_start(self) -> None:
        check_writable(self.path)
        for orphan in abandoned_temps(self.path):
            discard(orphan)
            logger.warning("%s: removed %s, left by an interrupted writer", self.path, orphan)
        self._tmp = temp_beside(self.path)
        try:
            self._lock = hold(self._tmp)
        except OSError as exc:
            self.discard()
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from exc
        self._written = 0
        if self.size is not None:
            self._writer = self._open(self.size)

    def _open(self, size: tuple[int, int]) -> cv2.VideoWriter:
        assert self._tmp is not None
        fourcc = cv2.VideoWriter.fourcc(*FOURCC)
        writer = cv2.VideoWriter(str(self._tmp), fourcc, self.fps, size)
        if not writer.isOpened():
            writer.release()
            self.discard()
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
        self._writer.write(fit_frame(image, size))
        self._written += 1

    def discard(self) -> None:
        """Close the writer and drop the temporary file: the target stays as it was."""
        writer, self._writer = self._writer, None
        tmp, self._tmp = self._tmp, None
        if writer is not None:
            writer.release()
        if tmp is not None:
            discard(tmp)
            logger.info("%s: discarded (%s frames not kept)", self.path, self._written)
        self._unlock()

    def _unlock(self) -> None:
        release(self._lock)
        self._lock = None

    def _on_stop(self) -> None:
        try:
            self._finish()
        finally:
            self._unlock()

    def _finish(self) -> None:
        writer, self._writer = self._writer, None
        tmp, self._tmp = self._tmp, None
        if writer is not None:
            writer.release()
        if tmp is None:
            return
        if self._written == 0:
            discard(tmp)
            logger.warning("%s: no frames were written; the file was not made", self.path)
            return
        try:
            check_video(tmp, self._written)
        except OutputError as exc:
            discard(tmp)
            raise OutputError(f"cannot write {self.path}: {exc}") from None
        publish(tmp, self.path)
        logger.info("%s: closed after %s frames", self.path, self._written)


def check_video(path: Path, frames: int) -> None:
    """Raise ``OutputError`` unless ``path`` opens, holds ``frames`` frames, its last decodes."""
    cap = cv2.VideoCapture(str(path))
    try:
        if not cap.isOpened():
            raise OutputError(
                f"the finished video cannot be read back ({_size_of(path)}; is the disk full?)"
            )
        count = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        if count != frames:
            raise OutputError(
                f"the finished video holds {count} of the {frames} frames written "
                f"({_size_of(path)}; is the disk full?)"
            )
        cap.set(cv2.CAP_PROP_POS_FRAMES, frames - 1)
        ok, _image = cap.read()
        if not ok:
            raise OutputError(f"the last of the {frames} frames cannot be read back")
    finally:
        cap.release()


def _size_of(path: Path) -> str:
    try:
        return f"{path.stat().st_size} bytes"
    except OSError:
        return "size unknown"
