"""Benchmark clips: a few seconds of real faces at a given size, with 1 or 3 faces.

A 1-face clip is ``count`` frames of a video (letterboxed to the size) or of
the demo photo camera. Its 3-face version tiles a 2x2 grid with 3 cells
filled (top left, top right, bottom centre), each cell a letterboxed copy of
the frame shown ``TILE_OFFSET`` frames apart so the three faces move
differently. Clips are kept as JPEG bytes (``JpegClip``): a 1280x720 clip of
150 frames is a few MiB instead of 400.

With the short-range detector, the tiled faces are found on every frame of
the ../shared/media videos; the demo photo's smaller face scores close to
the detection threshold when tiled, so some of its 3-face frames show fewer
faces (the benchmark reports the faces found per frame).

The group case (``group_clip``) is a half-body shot tiled the same way: each
frame of a talking-head clip shrunk to ``HALF_BODY_SCALE`` (as if the
visitor stood 2-3 m away) with its edges stretched to fill the frame, so a
tiled face is 30-60 px at 1280x720 and 640x480: only the tile scan finds it.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from appliance.errors import ConfigError
from appliance.media.demo_source import DemoSource
from appliance.media.frames import Image
from appliance.media.letterbox import letterbox
from appliance.media.source_base import FrameSource
from appliance.tools.live_clip import JpegClip
from appliance.tools.resized_video import ResizedVideoSource

logger = logging.getLogger(__name__)

TILE_OFFSET = 5  # frames between the copies of a 3-face tiling
FACES = (1, 3)  # the face counts a clip can be built with
HALF_BODY_SCALE = 0.25  # a talking head shrunk to this, tiled: faces of 30-60 px
HALF_BODY_TOP = 0.12  # where the shrunk frame's top goes, in frame heights
GROUP_SUFFIX = " (group)"


@dataclass(frozen=True)
class BenchClip:
    """A clip to benchmark: its name, size (w, h), faces shown and frames."""

    name: str
    size: tuple[int, int]
    faces: int
    clip: JpegClip


def _frames(source: FrameSource, count: int) -> Iterator[Image]:
    with source:
        for frame in itertools.islice(source, count):
            yield frame.image


def demo_clip(image: Image, size: tuple[int, int], count: int) -> JpegClip:
    """``count`` frames of the demo camera looking at ``image``."""
    return JpegClip.from_images(_frames(DemoSource(image, size=size, paced=False), count))


def video_clip(path: Path, size: tuple[int, int], count: int) -> JpegClip:
    """The first ``count`` frames of ``path`` (fewer if it is shorter), letterboxed."""
    return JpegClip.from_images(_frames(ResizedVideoSource(path, size), count))


def tile_cells(size: tuple[int, int]) -> list[tuple[int, int, int, int]]:
    """The three cells (x, y, w, h) of a 2x2 grid over ``size`` used by ``tile3``."""
    w, h = size
    cw, ch = w // 2, h // 2
    return [(0, 0, cw, ch), (cw, 0, cw, ch), (cw // 2, ch, cw, ch)]


def tile3(images: list[Image], size: tuple[int, int]) -> Image:
    """One frame of ``size`` showing ``images`` (three of them) in the ``tile_cells``."""
    if len(images) != 3:
        raise ConfigError(f"a 3-face tiling needs 3 images, got {len(images)}")
    canvas = np.zeros((size[1], size[0], 3), np.uint8)
    for image, (x, y, cw, ch) in zip(images, tile_cells(size), strict=True):
        canvas[y : y + ch, x : x + cw] = letterbox(image, (cw, ch))
    return canvas


def tiled_clip(clip: JpegClip, offset: int = TILE_OFFSET) -> JpegClip:
    """The 3-face version of ``clip``: copies ``offset`` frames apart, tiled."""
    n = len(clip)
    frames = (
        tile3([clip.decode((i + c * offset) % n) for c in range(3)], clip.size) for i in range(n)
    )
    return JpegClip.from_images(frames)


def half_body(image: Image, scale: float = HALF_BODY_SCALE) -> Image:
    """``image`` shrunk to ``scale`` near the top centre, its edges stretched to fill the frame."""
    h, w = image.shape[:2]
    nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
    small = cv2.resize(image, (nw, nh), interpolation=cv2.INTER_AREA)
    top, left = min(h - nh, round(h * HALF_BODY_TOP)), (w - nw) // 2
    border = (top, h - top - nh, left, w - left - nw)
    out: Image = np.asarray(cv2.copyMakeBorder(small, *border, cv2.BORDER_REPLICATE), np.uint8)
    return out


def group_clip(clip: JpegClip, offset: int = TILE_OFFSET) -> JpegClip:
    """Three half-body copies of ``clip``, ``offset`` frames apart, tiled: small faces."""
    n = len(clip)
    frames = (
        tile3([half_body(clip.decode((i + c * offset) % n)) for c in range(3)], clip.size)
        for i in range(n)
    )
    return JpegClip.from_images(frames)


def build_clips(name: str, base: JpegClip, faces: tuple[int, ...] = FACES) -> Iterator[BenchClip]:
    """``base`` as each requested face count (1: as it is, 3: tiled)."""
    for count in faces:
        if count not in FACES:
            raise ConfigError(f"faces must be among {FACES}, got {count}")
        clip = base if count == 1 else tiled_clip(base)
        yield BenchClip(name, base.size, count, clip)


def build_group(name: str, base: JpegClip) -> BenchClip:
    """The group case of ``base``: three small faces (``group_clip``)."""
    return BenchClip(name + GROUP_SUFFIX, base.size, 3, group_clip(base))
