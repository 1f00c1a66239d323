"""``mirror run --output``: a recording that a crash or a full disk cannot take away.

OpenCV's mp4 writer puts the file's index at its end, so a killed process leaves nothing
playable, and it reports no write errors. The recorder therefore writes the frames as
closed mp4 segments of :data:`SEGMENT_S` seconds into a hidden, locked folder beside the
target (:mod:`appliance.media.recording_parts`) and reads each one back when it closes.
:meth:`RecordingSink.finish` joins them (:mod:`appliance.media.video_join`) into the
target, checks the result and renames it into place.

- A crash (``kill -9``, power loss) loses at most the segment being written: the next
  recorder of the same target joins what was left into ``rec.recovered-<start>.mp4``
  and removes the folder.
- A segment that cannot be read back (a full disk) stops the recording: ``on_failure``
  is told why, and :meth:`finish` keeps the frames recorded before (as a crash would)
  and raises ``OutputError`` saying where they are.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import cv2

from appliance.errors import ConfigError, OutputError
from appliance.fileio import discard, publish, temp_beside
from appliance.media.frames import Frame
from appliance.media.recording_parts import Parts, abandoned_parts, move_into_place, recover
from appliance.media.sink_base import FrameSink
from appliance.media.video_join import FOURCC, join_videos, readable_frames
from appliance.media.video_sink import check_writable, fit_frame

logger = logging.getLogger(__name__)

SEGMENT_S = 2.0  # what a crash may lose, at most (and the open segment's frames)


class RecordingSink(FrameSink):
    """Frames into ``path`` (mp4v at ``fps``, the first frame's size), crash-safe.

    ``start()`` checks the path is writable, recovers what an interrupted recording of the
    same target left, and makes the segment folder. ``stop()`` closes the open segment;
    ``finish()`` (after the stop) makes the target, or raises ``OutputError``.
    """

    def __init__(
        self,
        path: str | Path,
        fps: float,
        on_failure: Callable[[str], None] | None = None,
        segment_s: float = SEGMENT_S,
    ) -> None:
        super().__init__()
        if not 0 < fps < float("inf"):
            raise ConfigError(f"output frame rate must be > 0, got {fps}")
        self.path = Path(path).expanduser()
        self.fps = float(fps)
        self.on_failure = on_failure
        self.per_segment = max(1, round(self.fps * segment_s))
        self.failure = ""  # why the recording stopped ("" while it works)
        self.kept = 0  # frames in segments that were read back
        self._size: tuple[int, int] | None = None
        self._parts: Parts | None = None
        self._writer: cv2.VideoWriter | None = None
        self._segment = -1
        self._in_segment = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RecordingSink({str(self.path)!r})"

    def _on_start(self) -> None:
        check_writable(self.path)
        for parts in abandoned_parts(self.path):
            try:
                kept = recover(parts)
            except OutputError as exc:
                kept = str(exc)
            logger.warning("%s: an earlier recording was interrupted; %s", self.path, kept)
        self._parts = Parts.create(self.path)
        logger.info("%s: recording into %s", self.path, self._parts.folder)

    def _write(self, frame: Frame) -> None:
        with self._lock:
            if self.failure or self._parts is None:
                return  # the recording stopped; the run is being stopped
            if self._writer is None:
                try:
                    self._writer = self._open_segment(frame)
                except OutputError as exc:
                    self._fail(str(exc))
                    return
            self._writer.write(fit_frame(frame.image, self._size or (0, 0)))
            self._in_segment += 1
            if self._in_segment >= self.per_segment:
                self._close_segment()

    def _open_segment(self, frame: Frame) -> cv2.VideoWriter:
        assert self._parts is not None
        if self._size is None:
            height, width = frame.image.shape[:2]
            self._size = (int(width), int(height))
        self._segment += 1
        self._in_segment = 0
        path = self._parts.segment(self._segment)
        writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*FOURCC), self.fps, self._size)
        if not writer.isOpened():
            writer.release()
            raise OutputError(f"cannot write {self.path}: OpenCV could not open a video writer")
        return writer

    def _close_segment(self) -> None:
        """Close the open segment and read it back; a segment that does not read back
        (the disk full or failing) ends the recording."""
        writer, self._writer = self._writer, None
        if writer is None or self._parts is None:
            return
        writer.release()
        segment = self._parts.segment(self._segment)
        if readable_frames(segment) == self._in_segment:
            self.kept += self._in_segment
            return
        discard(segment)
        self._fail(
            f"segment {segment.name} of the recording could not be read back after "
            f"{self.kept} good frames (is the disk full?)"
        )

    def _fail(self, why: str) -> None:
        self.failure = why
        logger.error("%s: %s; the recording stops", self.path, why)
        if self.on_failure is not None:
            self.on_failure(why)

    def _on_stop(self) -> None:
        with self._lock:
            self._close_segment()

    def finish(self) -> None:
        """Make the target from the segments, or raise ``OutputError`` (what was recorded is
        kept, as after a crash). Call after the pipeline stopped; a second call does nothing."""
        self.stop()
        with self._lock:
            parts, self._parts = self._parts, None
        if parts is None:
            return
        if self.failure:
            self._keep(parts)
        if self.kept == 0:
            parts.remove()
            logger.warning("%s: no frames were written; the file was not made", self.path)
            return
        try:
            self._make_target(parts.segments())
        except OutputError as exc:
            self.failure = str(exc)
            self._keep(parts)
        parts.remove()
        logger.info("%s: closed after %s frames", self.path, self.kept)

    def _make_target(self, segments: list[Path]) -> None:
        if len(segments) == 1:
            move_into_place(segments[0], self.path)
            return
        tmp = temp_beside(self.path)
        try:
            written = join_videos(segments, tmp, self.fps)
            readable = readable_frames(tmp)
            if written != self.kept or readable != self.kept:
                raise OutputError(
                    f"the finished video holds {readable} of the {self.kept} frames "
                    "recorded (is the disk full?)"
                )
        except BaseException:
            discard(tmp)
            raise
        publish(tmp, self.path)

    def _keep(self, parts: Parts) -> None:
        """Keep what was recorded as an interrupted recording is kept, and raise."""
        parts.unlock()
        try:
            kept = recover(parts)
        except OutputError as exc:
            kept = str(exc)
        why = self.failure.removeprefix(f"cannot write {self.path}: ")
        raise OutputError(f"cannot write {self.path}: {why}; {kept}")
