"""What a label text must be to be drawn visibly: checks on the text and on the font.

The label is a safety feature, so a text is accepted only when it is sure to
show: one line of printable characters (no control or format characters,
Unicode categories Cc, Cf, Cs, Co, Cn, Zl, Zp: line breaks, NUL, zero-width
and bidi marks), every character other than a space drawn by a real glyph of
the label font (not the missing-glyph box, not an empty glyph), at least
:data:`MIN_VISIBLE_GLYPHS` of them, and the rendered ink at least
:data:`MIN_INK_WIDTH` cap heights wide, :data:`MIN_INK_HEIGHT` high and
:data:`MIN_INK_AREA` cap heights squared in area (so "--" or ".." fail), and no
words that deny the AI disclosure ("unedited", "real person"...: see
:mod:`appliance.label_disclosure`, which also puts the fixed disclosure before a
label that does not say it itself).

:func:`label_text_problem` says what is wrong (or None). The settings model
runs it on every label and prompt with the bundled font when that is
installed (the text checks alone otherwise); :class:`Labeler` runs it again
with the font it draws with.
"""

from __future__ import annotations

import functools
import logging
import math
import unicodedata
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from appliance.errors import MirrorError
from appliance.label_disclosure import denial_problem
from appliance.modelstore.manifest import load_manifest
from appliance.paths import manifest_path, model_cache_dir

logger = logging.getLogger(__name__)

DEFAULT_LABEL_TEXT = "AI-generated"
FONT_ENTRY = "label_font"  # the manifest's name for the bundled font
REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible format character",
    "Cs": "a surrogate",
    "Co": "a private-use character",
    "Cn": "an unassigned code point",
    "Zl": "a line break",
    "Zp": "a paragraph break",
}
MIN_VISIBLE_GLYPHS = 2
MIN_INK_WIDTH = 1.0  # in cap heights ("AI" is 1.09)
MIN_INK_HEIGHT = 0.6  # in cap heights ("~~" is 0.2)
MIN_INK_AREA = 0.3  # in cap heights squared ("AI" is 0.39, "--" 0.06)
CHECK_SIZE = 64  # font size the font checks render at
INK_LEVEL = 128
_MISSING_PROBE = "\u0378"  # unassigned: every font draws its missing-glyph box for it


def describe(char: str) -> str:
    """``U+200B ZERO WIDTH SPACE`` for a character."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" {name}" if name else "")


def text_problem(text: str) -> str | None:
    """What makes ``text`` unfit for a label without looking at a font, or None."""
    for char in text:
        kind = REFUSED_CATEGORIES.get(unicodedata.category(char))
        if kind:
            return f"contains {describe(char)}, {kind}: use one line of visible text"
    visible = sum(1 for char in text if _counts_as_glyph(char))
    if visible < MIN_VISIBLE_GLYPHS:
        return f"needs at least {MIN_VISIBLE_GLYPHS} visible characters, has {visible}"
    return denial_problem(text)


def label_text_problem(text: str, font_path: Path | None) -> str | None:
    """What makes ``text`` unfit for a label drawn with ``font_path`` (None: text checks only)."""
    return text_problem(text) or (None if font_path is None else _font_problem(text, font_path))


def bundled_font_path() -> Path | None:
    """The label font installed in the model store, or None when it is not there."""
    try:
        path = model_cache_dir() / _font_file_name(manifest_path())
    except MirrorError as exc:
        logger.debug("no label font to check labels with: %s", exc)
        return None
    return path if path.is_file() else None


@functools.lru_cache(maxsize=4)
def _font_file_name(manifest: Path) -> str:
    return load_manifest(manifest).entry(FONT_ENTRY).file


def _counts_as_glyph(char: str) -> bool:
    return unicodedata.category(char)[0] not in "ZM"


def _font_problem(text: str, font_path: Path) -> str | None:
    try:
        stamp = font_path.stat().st_mtime_ns
    except OSError as exc:
        return f"the label font {font_path} cannot be read: {exc}"
    return _cached_font_problem(text, str(font_path), stamp)


@functools.lru_cache(maxsize=64)
def _cached_font_problem(text: str, font_file: str, stamp: int) -> str | None:
    del stamp  # part of the cache key only: a replaced font is checked again
    try:
        shaped = ImageFont.truetype(font_file, CHECK_SIZE)
        plain = ImageFont.truetype(font_file, CHECK_SIZE, layout_engine=ImageFont.Layout.BASIC)
    except OSError as exc:
        return f"the label font {font_file} cannot be loaded: {exc}"
    missing = _ink(plain, _MISSING_PROBE)
    for char in dict.fromkeys(text):
        ink = _ink(plain, char)
        if ink.shape == missing.shape and np.array_equal(ink, missing):
            return f"{describe(char)} is not in the label font (it would show as a box)"
        if _counts_as_glyph(char) and not ink.any():
            return f"{describe(char)} draws nothing in the label font"
    try:
        return _size_problem(_ink(shaped, text), _ink_box(_ink(shaped, "H"))[1])
    except (OSError, ValueError, RuntimeError) as exc:
        return f"cannot be drawn: {exc}"


def _size_problem(ink: np.ndarray, cap: int) -> str | None:
    width, height = _ink_box(ink)
    area = int(ink.sum())
    if width < MIN_INK_WIDTH * cap or height < MIN_INK_HEIGHT * cap or area < MIN_INK_AREA * cap**2:
        return (
            f"draws too little ink ({width / cap:.2f} x {height / cap:.2f} cap heights, "
            f"area {area / cap**2:.2f}; needs {MIN_INK_WIDTH} x {MIN_INK_HEIGHT}, "
            f"area {MIN_INK_AREA})"
        )
    return None


def _ink(font: ImageFont.FreeTypeFont, text: str) -> np.ndarray:
    """Pixels of ``text`` at least half covered, on a canvas around its bounding box."""
    left, top, right, bottom = (math.floor(v) for v in font.getbbox(text, anchor="ls"))
    slack = CHECK_SIZE // 4
    canvas = Image.new("L", (right - left + 2 * slack, bottom - top + 2 * slack), 0)
    ImageDraw.Draw(canvas).text((slack - left, slack - top), text, font=font, fill=255, anchor="ls")
    mask: np.ndarray = np.asarray(canvas, dtype=np.uint8) >= INK_LEVEL
    return mask


def _ink_box(mask: np.ndarray) -> tuple[int, int]:
    """(width, height) of the ink in ``mask``; (0, 0) without ink."""
    ys, xs = np.nonzero(mask)
    if not ys.size:
        return 0, 0
    return int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)
