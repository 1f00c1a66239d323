"""What the boot test expects on the VM's screen, drawn here by the mirror's own code.

The mirror writes its frames letterboxed into the 1280x800 framebuffer of
QEMU's virtio-gpu; a ``screendump`` of it is compared with the same drawing
made here: the Labeler's label on a frame of the source's size, and the
first-boot screen with a venue-file problem line, both letterboxed to the
screen the same way the framebuffer sink does.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from PIL import Image

from appliance.config import LabelSettings
from appliance.media.letterbox import letterbox
from appliance.media.overlays import WARNING_RGB, FirstBootInfo, Overlays
from appliance.vision.label import Labeler

logger = logging.getLogger(__name__)

SCREEN = (1280, 800)


def shot_rgb(shot: Path) -> np.ndarray:
    """A screendump (PPM) as an RGB array of the screen's size."""
    assert shot.is_file(), f"no screendump {shot}"
    with Image.open(shot) as picture:
        assert picture.size == SCREEN, picture.size
        pixels: np.ndarray = np.asarray(picture.convert("RGB"), dtype=np.uint8)
    return pixels


def label_masks(font: Path, frame_size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Where the default label puts ink (white over any picture) and its dark box (around the
    ink), on the screen, for frames of ``frame_size`` (w, h)."""
    labeler = Labeler(LabelSettings(), font)
    w, h = frame_size
    on_black = letterbox(labeler.apply(np.zeros((h, w, 3), np.uint8)), SCREEN)
    on_white = letterbox(labeler.apply(np.full((h, w, 3), 255, np.uint8)), SCREEN)
    inside = inside_frame(frame_size)
    ink = on_black.min(axis=-1) > 200  # white even over black
    box = inside & (on_white.max(axis=-1) < 120) & ~ink  # darkened even over white
    return ink, box


def inside_frame(frame_size: tuple[int, int]) -> np.ndarray:
    """Where frames of ``frame_size`` land on the screen (not the letterbox's bars)."""
    w, h = frame_size
    inside: np.ndarray = letterbox(np.full((h, w, 3), 255, np.uint8), SCREEN).min(axis=-1) > 200
    return inside


def _best_ink_match(bright: np.ndarray, ink: np.ndarray, reach: int) -> float:
    """The largest share of ``ink`` pixels found ``bright``, over shifts of up to ``reach``
    pixels (the device's font rasteriser may place the glyphs a pixel apart; upscaled to
    the screen that is a few pixels)."""
    rows, cols = np.nonzero(ink)
    height, width = bright.shape
    best = 0.0
    for dy in range(-reach, reach + 1):
        for dx in range(-reach, reach + 1):
            r, c = rows + dy, cols + dx
            keep = (r >= 0) & (r < height) & (c >= 0) & (c < width)
            best = max(best, float(bright[r[keep], c[keep]].sum()) / len(rows))
    return best


def check_label(shot: Path, font: Path, frame_size: tuple[int, int]) -> None:
    """The label is on the screen where the Labeler puts it: its ink white, its box dark."""
    pixels = shot_rgb(shot)
    ink, box = label_masks(font, frame_size)
    assert ink.sum() > 300 and box.sum() > 1000, (ink.sum(), box.sum())
    inked = _best_ink_match(pixels.min(axis=-1) > 170, ink, reach=8)
    boxed = float((pixels[box].max(axis=-1) < 140).mean())
    assert inked > 0.85 and boxed > 0.85, f"label ink {inked:.2f}, box {boxed:.2f} of the pixels"
    # the picture around the label is not blank: a frame of the mirror, not a screen
    picture = pixels[inside_frame(frame_size) & ~(ink | box)]
    assert float(picture.std()) > 10, picture.std()


def warning_ink(pixels_rgb: np.ndarray) -> np.ndarray:
    near: np.ndarray = np.all(
        np.abs(pixels_rgb.astype(np.int16) - np.array(WARNING_RGB, dtype=np.int16)) <= 40,
        axis=-1,
    )
    return near


def first_boot_expected(
    font: Path, frame_size: tuple[int, int], info: FirstBootInfo, problem: str | None
) -> np.ndarray:
    """The first-boot screen (RGB, screen-sized) as the mirror draws it on frames of
    ``frame_size``, with ``problem`` under it."""
    screen = Overlays(font, problem=problem).first_boot_screen(frame_size, info)
    rgb: np.ndarray = letterbox(screen, SCREEN)[..., ::-1]
    return rgb


def _extent(mask: np.ndarray) -> tuple[int, int, int, int]:
    rows, cols = np.nonzero(mask)
    return int(rows.min()), int(rows.max()), int(cols.min()), int(cols.max())


def check_problem_line(
    shot: Path, font: Path, frame_size: tuple[int, int], info: FirstBootInfo, problem: str
) -> None:
    """The problem's line is on the screen as the mirror draws it: its warning-coloured ink in
    the place and of the extent of the drawing here (within a few pixels: the device's font
    rasteriser places glyphs a pixel or two apart from this machine's), and nowhere else."""
    pixels = shot_rgb(shot)
    expected = warning_ink(first_boot_expected(font, frame_size, info, problem))
    assert expected.sum() > 150, expected.sum()
    seen = warning_ink(pixels)
    assert 0.5 * expected.sum() < seen.sum() < 2 * expected.sum(), (seen.sum(), expected.sum())
    want, got = _extent(expected), _extent(seen)
    assert all(abs(a - b) <= 8 for a, b in zip(want, got, strict=True)), (want, got)
