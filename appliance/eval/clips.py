"""The frames of a clip to evaluate: a video file or a folder of images (sorted by name)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from appliance.errors import InputError
from appliance.media.frames import Image
from appliance.media.video_source import VideoFileSource, frame_count
from appliance.vision.identity import read_image

logger = logging.getLogger(__name__)

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff"})
FOLDER_FPS = 25.0  # the clock a folder of images is played on


class Frames(Protocol):
    """What ``evaluate`` plays: a name (``path``), a frame rate and the frames."""

    @property
    def path(self) -> Path: ...

    @property
    def fps(self) -> float: ...

    def images(self) -> Iterator[Image]: ...


@dataclass(frozen=True)
class Clip:
    """A clip: its name, frame rate and (when known) frame count."""

    path: Path
    fps: float
    frame_count: int | None

    @property
    def name(self) -> str:
        return self.path.stem if self.path.is_file() else self.path.name

    def images(self) -> Iterator[Image]:
        """The clip's frames, BGR, in order."""
        if self.path.is_dir():
            for file in _image_files(self.path):
                yield read_image(file)
            return
        with VideoFileSource(self.path, paced=False) as source:
            for frame in source:
                yield frame.image


def _image_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)


def open_clip(path: Path) -> Clip:
    """Check ``path`` and describe it; one-line errors for what cannot be read."""
    path = Path(path)
    if path.is_dir():
        files = _image_files(path)
        if not files:
            raise InputError(
                f"{path}: folder holds no images ({', '.join(sorted(IMAGE_SUFFIXES))})"
            )
        return Clip(path, FOLDER_FPS, len(files))
    source = VideoFileSource(path, paced=False)  # raises SourceError when unusable
    return Clip(path, source.fps, frame_count(path))
