"""The segments of one recording, in a hidden folder beside its target, and their recovery.

``rec.mp4`` is recorded into ``.rec.mp4.parts-<start time>-<random>/000000.mp4``,
``000001.mp4``... (see :mod:`appliance.media.recording_sink`); the recorder holds the
folder's lock (:mod:`appliance.media.work_locks`) while it works. A folder whose lock
can be taken was left by a recorder that was killed, or that could not finish (a full
disk): :func:`recover` joins its readable segments into ``rec.recovered-<start time>.mp4``
beside the target and removes the folder; a folder with nothing readable is removed.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import cv2

from appliance.errors import OutputError
from appliance.fileio import discard, publish, temp_beside
from appliance.media.video_join import join_videos, readable_frames
from appliance.media.work_locks import abandoned, hold, release

logger = logging.getLogger(__name__)

PARTS_MARK = ".parts-"
STAMP_FORMAT = "%Y%m%d-%H%M%S"
_STAMP_RE = r"(\d{8}-\d{6})"
_RANDOM_RE = r"[a-z0-9_]{8}"  # what tempfile puts in a name


class Parts:
    """The hidden, locked folder of one recording's segments."""

    def __init__(self, folder: Path, target: Path, lock: int | None = None) -> None:
        self.folder = folder
        self.target = target
        self._lock = lock

    @classmethod
    def create(cls, target: Path) -> Parts:
        """A new folder beside ``target``, locked; ``OutputError`` when it cannot be made."""
        prefix = f".{target.name}{PARTS_MARK}{time.strftime(STAMP_FORMAT)}-"
        try:
            folder = Path(tempfile.mkdtemp(prefix=prefix, dir=target.parent))
            return cls(folder, target, hold(folder))
        except OSError as exc:
            raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc

    def segment(self, index: int) -> Path:
        return self.folder / f"{index:06d}{self.target.suffix}"

    def segments(self) -> list[Path]:
        """The segment files there, in order."""
        pattern = re.compile(r"\d{6}" + re.escape(self.target.suffix))
        try:
            names = sorted(p.name for p in self.folder.iterdir() if pattern.fullmatch(p.name))
        except OSError:
            return []
        return [self.folder / name for name in names]

    @property
    def stamp(self) -> str:
        """When the recording started (``20250131-154500``), from the folder's name."""
        match = re.search(_STAMP_RE, self.folder.name[len(self.target.name) + 1 :])
        return match.group(1) if match else time.strftime(STAMP_FORMAT)

    def remove(self) -> None:
        """Delete the folder and what it holds, and let go of its lock."""
        shutil.rmtree(self.folder, ignore_errors=True)
        self.unlock()

    def unlock(self) -> None:
        release(self._lock)
        self._lock = None


def abandoned_parts(target: Path) -> list[Parts]:
    """The segment folders of ``target`` that no running recorder holds."""
    pattern = re.compile(re.escape(f".{target.name}{PARTS_MARK}") + _STAMP_RE + "-" + _RANDOM_RE)
    try:
        found = sorted(p for p in target.parent.iterdir() if pattern.fullmatch(p.name))
    except OSError:
        return []
    return [Parts(folder, target) for folder in found if folder.is_dir() and abandoned(folder)]


def recovered_path(target: Path, stamp: str) -> Path:
    """``rec.recovered-<stamp>.mp4`` beside ``target``, with ``-2``, ``-3``... if taken."""
    base = f"{target.stem}.recovered-{stamp}"
    candidate = target.with_name(f"{base}{target.suffix}")
    number = 1
    while candidate.exists():
        number += 1
        candidate = target.with_name(f"{base}-{number}{target.suffix}")
    return candidate


def readable_segments(parts: Parts) -> tuple[list[Path], int]:
    """The segments that open and decode to their last frame, and their frames in all.
    The rest (the one being written when the recorder died) are deleted."""
    kept: list[Path] = []
    frames = 0
    for segment in parts.segments():
        count = readable_frames(segment)
        if count > 0:
            kept.append(segment)
            frames += count
        else:
            discard(segment)
    return kept, frames


def recover(parts: Parts) -> str:
    """Join what ``parts`` holds into a visible file beside its target and remove the
    folder; what was done, in words. When the joined file cannot be written (a full
    disk) the folder stays, for the next start, and ``OutputError`` says so."""
    segments, frames = readable_segments(parts)
    if not segments:
        parts.remove()
        return f"removed {parts.folder.name}: nothing in it could be played"
    out = recovered_path(parts.target, parts.stamp)
    try:
        _join_into(segments, frames, out)
    except OutputError as exc:
        raise OutputError(
            f"{frames} recorded frames are kept in {parts.folder} ({exc}); they are joined "
            "into a playable file at the next start of this recording"
        ) from None
    parts.remove()
    return f"the {frames} frames recorded are kept in {out}"


def move_into_place(segment: Path, out: Path) -> None:
    """Flush ``segment`` and rename it to ``out`` (no space needed, even on a full disk);
    ``OutputError`` when it cannot be, the segment kept."""
    try:
        with open(segment, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(segment, out)
    except OSError as exc:
        raise OutputError(f"cannot write {out}: {exc.strerror or exc}") from exc


def _join_into(segments: list[Path], frames: int, out: Path) -> None:
    if len(segments) == 1:
        move_into_place(segments[0], out)
        return
    tmp = temp_beside(out)
    try:
        written = join_videos(segments, tmp, _fps(segments[0]))
        readable = readable_frames(tmp)
        if written != frames or readable != frames:
            raise OutputError(f"the joined file holds {readable} of {frames} frames; disk full?")
    except BaseException:
        discard(tmp)
        raise
    publish(tmp, out)


def _fps(segment: Path) -> float:
    cap = cv2.VideoCapture(str(segment))
    try:
        fps = float(cap.get(cv2.CAP_PROP_FPS))
    finally:
        cap.release()
    return fps if fps > 0 else 30.0
