"""The visible "AI-generated" label drawn on every swapped frame.

Text is rendered once per (text, frame size) with Pillow/FreeType, so any
Unicode the font covers (e.g. "AI合成") works, into a patch of premultiplied
integer blend weights. :meth:`Labeler.apply` then only blends that patch
into the frame, which takes well under a millisecond at 720p.

What is drawn always discloses: a configured text that does not say the image is
AI-generated gets the fixed disclosure before it (:mod:`appliance.label_disclosure`:
"AI-generated · City Museum"), and one that denies it is refused.
The text is checked again here with the font it is drawn with
(:mod:`appliance.label_text`); a text that fails the check, fails to
render or renders too little ink is replaced by :data:`DEFAULT_LABEL_TEXT`
(the reason logged), so a frame is never labelled with an invisible label.
Only when the default label itself cannot be drawn is that an error.

The label's glyph height is the cap height of the font as actually rendered
(the ink of "H", counting pixels at least half covered); it is at least
``size_fraction`` of the frame's shorter side unless the frame is too narrow
for the text, in which case the label shrinks to fit.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageDraw, ImageFont

from appliance.config import LabelSettings
from appliance.errors import InputError, ModelError, ModelMissingError
from appliance.label_disclosure import disclosed_label
from appliance.label_text import DEFAULT_LABEL_TEXT, MIN_INK_AREA, label_text_problem

logger = logging.getLogger(__name__)

MIN_FRAME_SIDE = 64
TEXT_BGR = (255, 255, 255)
BOX_BGR = (16, 16, 16)
BOX_OPACITY = 0.62
INK_THRESHOLD = 128  # a pixel counts as ink when at least half covered
CAP_REFERENCE = "H"
_CAP_RATIO_GUESS = 0.73  # Noto Sans cap height / em; only a starting point
_SUPERSAMPLE = 4
_CACHE_SIZE = 8

U8Image = npt.NDArray[np.uint8]
U16Array = npt.NDArray[np.uint16]


@dataclass(frozen=True)
class _Patch:
    """Integer blend weights: ``out = (roi * inv + add) >> 8``."""

    x0: int
    y0: int
    inv: U16Array
    add: U16Array
    font_size: int
    cap_height: int
    text: str
    ink: int  # text pixels at least half covered

    @property
    def box(self) -> tuple[int, int, int, int]:
        h, w = self.inv.shape[:2]
        return (self.x0, self.y0, self.x0 + w, self.y0 + h)


class Labeler:
    """Draws the configured label onto BGR frames."""

    def __init__(self, settings: LabelSettings, font_path: Path, *, disclose: bool = True) -> None:
        self.settings = settings
        self.font_path = Path(font_path)
        _check_font(self.font_path)
        # what is drawn: the AI disclosure with the venue's words (``disclose=False``: the
        # text alone, for the liveness prompt), the default when that cannot be drawn
        self.text = disclosed_label(settings.text) if disclose else settings.text
        problem = label_text_problem(settings.text, self.font_path) or label_text_problem(
            self.text, self.font_path
        )
        if problem:
            self.text = _fall_back(self.text, problem, self.font_path)
        self._cache: dict[tuple[str, int, int], _Patch] = {}

    def apply(self, image: U8Image) -> U8Image:
        """Blend the label into ``image`` in place and return it."""
        _check_frame(image)
        patch = self._patch(image.shape[0], image.shape[1])
        x0, y0, x1, y1 = patch.box
        roi = image[y0:y1, x0:x1]
        blended = np.multiply(roi, patch.inv, dtype=np.uint16)
        blended += patch.add
        blended >>= 8
        np.copyto(roi, blended, casting="unsafe")
        return image

    def region(self, shape: tuple[int, ...]) -> tuple[int, int, int, int]:
        """The box ``(x0, y0, x1, y1)``, ends exclusive, that :meth:`apply` draws into."""
        height, width = _frame_size(shape)
        return self._patch(height, width).box

    def glyph_height(self, shape: tuple[int, ...]) -> int:
        """The rendered cap height in pixels used for a frame of ``shape``."""
        height, width = _frame_size(shape)
        return self._patch(height, width).cap_height

    def _patch(self, height: int, width: int) -> _Patch:
        key = (self.text, height, width)
        patch = self._cache.get(key)
        if patch is None:
            patch = self._visible_patch(height, width)
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = patch
        return patch

    def _visible_patch(self, height: int, width: int) -> _Patch:
        """The patch for ``self.text``, or for the default label when that one would not show.

        The default label is drawn however little ink it has on a tiny frame
        (there is nothing more visible to fall back to); it is an error only
        when it cannot be rendered at all.
        """
        try:
            patch = self._render(self.text, height, width)
        except (OSError, ValueError, RuntimeError) as exc:
            problem = f"cannot be rendered ({type(exc).__name__}: {exc})"
        else:
            floor = _ink_floor(patch.cap_height)
            if patch.ink >= floor or self.text == DEFAULT_LABEL_TEXT:
                return patch
            problem = f"renders {patch.ink} ink pixels at {width}x{height}, under {floor}"
        return self._render(_fall_back(self.text, problem, self.font_path), height, width)

    def _render(self, label: str, height: int, width: int) -> _Patch:
        short = min(height, width)
        target = max(1, math.ceil(self.settings.size_fraction * short - 1e-9))
        margin = max(2, round(0.02 * short))
        avail_w, avail_h = width - 2 * margin, height - 2 * margin
        size = self._size_to_fit(label, self._size_for_cap(target), avail_w, avail_h)
        box, text, cap = self._layout(label, size)
        if cap < target:
            logger.warning(
                "label %r shrunk to %d px (wanted %d px) to fit a %dx%d frame",
                label,
                cap,
                target,
                width,
                height,
            )
        inv, add = _blend_weights(box, text)
        inv, add = inv[:avail_h, :avail_w], add[:avail_h, :avail_w]
        ink = int(np.count_nonzero(text[:avail_h, :avail_w] >= INK_THRESHOLD))
        x0, y0 = _place(self.settings.position, (height, width), inv.shape[:2], margin)
        return _Patch(x0, y0, inv, add, size, cap, label, ink)

    def _font(self, size: int) -> ImageFont.FreeTypeFont:
        try:
            return ImageFont.truetype(str(self.font_path), size)
        except OSError as exc:
            raise ModelError(f"label font {self.font_path} cannot be loaded: {exc}") from exc

    def _size_for_cap(self, target: int) -> int:
        """The smallest font size whose rendered cap height is >= ``target``."""
        size, limit = max(1, round(target / _CAP_RATIO_GUESS)), 4 * target + 8
        while size < limit and _ink_height(self._font(size), CAP_REFERENCE) < target:
            size += 1
        while size > 1 and _ink_height(self._font(size - 1), CAP_REFERENCE) >= target:
            size -= 1
        return size

    def _size_to_fit(self, label: str, size: int, avail_w: int, avail_h: int) -> int:
        """Shrink ``size`` until the label's estimated box fits ``avail_w`` x ``avail_h``."""
        while size > 1:
            box_w, box_h = self._box_estimate(label, size)
            if box_w <= avail_w and box_h <= avail_h:
                break
            scale = min(avail_w / box_w, avail_h / box_h)
            size = max(1, min(size - 1, math.floor(size * scale)))
        return size

    def _box_estimate(self, label: str, size: int) -> tuple[int, int]:
        """Box (width, height) at font ``size`` from metrics, without rendering the text."""
        font = self._font(size)
        left, top, right, bottom = font.getbbox(label, anchor="ls")
        pad_x, pad_y = _padding(_ink_height(font, CAP_REFERENCE))
        return math.ceil(right - left) + 2 * pad_x, math.ceil(bottom - top) + 2 * pad_y

    def _layout(self, label: str, size: int) -> tuple[U8Image, U8Image, int]:
        """Box and text coverage of the label at font ``size``, and its cap height."""
        font = self._font(size)
        cap = _ink_height(font, CAP_REFERENCE)
        box, text = _pad_in_box(_crop_to_ink(_render_text(font, label)), cap)
        return box, text, cap


def _fall_back(text: str, problem: str, font_path: Path) -> str:
    """The default label instead of ``text``, the reason logged; an error for the default."""
    if text == DEFAULT_LABEL_TEXT:
        raise ModelError(
            f"the default label {DEFAULT_LABEL_TEXT!r} cannot be drawn with {font_path}: {problem}"
        )
    logger.warning(
        "label %r %s; drawing the default label %r instead", text, problem, DEFAULT_LABEL_TEXT
    )
    return DEFAULT_LABEL_TEXT


def _ink_floor(cap: int) -> int:
    """Fewest ink pixels a label with glyphs ``cap`` pixels high must show (half the checked)."""
    return max(1, math.floor(0.5 * MIN_INK_AREA * cap * cap))


def _check_font(path: Path) -> None:
    if not path.is_file():
        raise ModelMissingError(
            f"label font {path} is missing; run `mirror models fetch` to get it"
        )
    try:
        ImageFont.truetype(str(path), 16)
    except OSError as exc:
        raise ModelError(f"label font {path} cannot be loaded: {exc}") from exc


def _frame_size(shape: tuple[int, ...]) -> tuple[int, int]:
    if len(shape) < 2:
        raise InputError(f"frame shape {shape} is not an image shape")
    height, width = int(shape[0]), int(shape[1])
    if height < MIN_FRAME_SIDE or width < MIN_FRAME_SIDE:
        raise InputError(
            f"frame {width}x{height} is too small for the label "
            f"(at least {MIN_FRAME_SIDE}x{MIN_FRAME_SIDE})"
        )
    return height, width


def _check_frame(image: U8Image) -> None:
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8:
        raise InputError("label frame must be a uint8 numpy array")
    if image.ndim != 3 or image.shape[2] != 3:
        raise InputError(f"label frame must be HxWx3 BGR, not shape {image.shape}")
    _frame_size(image.shape)


def _render_text(font: ImageFont.FreeTypeFont, text: str) -> U8Image:
    """Coverage of ``text`` (0-255) on a canvas with slack around its bbox."""
    left, top, right, bottom = (math.floor(v) for v in font.getbbox(text, anchor="ls"))
    slack = max(4, math.ceil(font.size) // 2)
    canvas = Image.new("L", (right - left + 2 * slack, bottom - top + 2 * slack), 0)
    ImageDraw.Draw(canvas).text((slack - left, slack - top), text, font=font, fill=255, anchor="ls")
    return np.asarray(canvas, dtype=np.uint8)


def _ink_height(font: ImageFont.FreeTypeFont, text: str) -> int:
    """Rows of ``text`` that hold ink (coverage >= :data:`INK_THRESHOLD`)."""
    rows = np.nonzero((_render_text(font, text) >= INK_THRESHOLD).any(axis=1))[0]
    return int(rows[-1] - rows[0] + 1) if rows.size else 0


def _crop_to_ink(mask: U8Image) -> U8Image:
    ys, xs = np.nonzero(mask)
    if not ys.size:
        return np.zeros((1, 1), np.uint8)
    return mask[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]


def _padding(cap: int) -> tuple[int, int]:
    return max(2, round(0.45 * cap)), max(2, round(0.35 * cap))


def _pad_in_box(text_mask: U8Image, cap: int) -> tuple[U8Image, U8Image]:
    """Rounded-box coverage around ``text_mask``, and the text placed inside it."""
    pad_x, pad_y = _padding(cap)
    th, tw = text_mask.shape
    bh, bw = th + 2 * pad_y, tw + 2 * pad_x
    radius = max(1, round(0.4 * cap))
    big = Image.new("L", (bw * _SUPERSAMPLE, bh * _SUPERSAMPLE), 0)
    ImageDraw.Draw(big).rounded_rectangle(
        (0, 0, bw * _SUPERSAMPLE - 1, bh * _SUPERSAMPLE - 1),
        radius=radius * _SUPERSAMPLE,
        fill=255,
    )
    box = np.asarray(big.resize((bw, bh), Image.Resampling.BOX), dtype=np.uint8)
    text = np.zeros_like(box)
    text[pad_y : pad_y + th, pad_x : pad_x + tw] = text_mask
    return box, text


def _blend_weights(box_mask: U8Image, text_mask: U8Image) -> tuple[U16Array, U16Array]:
    """Premultiplied weights (x256) for white text over the semi-opaque box."""
    ink = text_mask.astype(np.float32) * np.float32(1.0 / 255.0)
    under = box_mask.astype(np.float32) * np.float32(BOX_OPACITY / 255.0) * (1.0 - ink)
    a256 = np.rint((ink + under) * 256.0)[..., None]
    text_bgr, box_bgr = (np.array(c, np.float32) * 256.0 for c in (TEXT_BGR, BOX_BGR))
    premult = np.rint(ink[..., None] * text_bgr + under[..., None] * box_bgr)
    np.minimum(premult, 255.0 * a256, out=premult)
    inv = np.repeat((256.0 - a256).astype(np.uint16), 3, axis=2)
    add = (premult + 128.0).astype(np.uint16)
    return inv, add


def _place(
    position: str, frame: tuple[int, int], patch: tuple[int, int], margin: int
) -> tuple[int, int]:
    """Top-left corner of a ``patch`` (h, w) at ``position`` in a ``frame`` (h, w)."""
    (fh, fw), (ph, pw) = frame, patch
    y0 = margin if position.startswith("top") else fh - margin - ph
    if position.endswith("left"):
        x0 = margin
    elif position.endswith("right"):
        x0 = fw - margin - pw
    else:
        x0 = (fw - pw) // 2
    return x0, y0
