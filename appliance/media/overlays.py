"""What the mirror draws for people besides the swap: screens and the cooling notice.

Full screens shown instead of the camera (first boot, idle, camera lost, the
accelerator being prepared) are
drawn with Pillow in the label's CJK font (``store.path("label_font")``), so
any text the font covers can be shown; ``ScreenTexts`` holds the words, to be
localised. Each screen is rendered once per (screen, size) and returned as a
BGR image; callers copy it before drawing on it. ``draw_notice`` dims a frame
and writes the cooling notice on it (the thermal gate's CRITICAL state). The
AI-generated label and the liveness prompt are both drawn by ``Labeler``
(``appliance/vision/label.py``): one drawing code, the prompt being a labeler
with its own text.

``staff_note`` is one short line for staff on the HDMI screen (the mirror
running on the CPU because its accelerator is not in use): small, at the left
edge halfway down, where neither the label nor the prompt ever is (both sit
at the top or bottom edge, at most a quarter of the shorter side high).
``update_note`` is the A/B update's line (``media.update_note``): as small, in a
corner (:func:`update_corner`) clear of the visitor's face, which the mirror shows in
the middle, and of the label and the prompt.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image as PilImage
from PIL import ImageDraw, ImageFont

from appliance.errors import ModelError
from appliance.media.frames import Image

logger = logging.getLogger(__name__)

BACKGROUND_RGB = (12, 12, 16)
TEXT_RGB = (240, 240, 240)
ACCENT_RGB = (120, 200, 255)
WARNING_RGB = (255, 196, 64)  # the installer's problem line (a bad venue file)
PROBLEM_HEIGHT = 0.032  # its text height as a share of the screen's
NOTE_HEIGHT = 0.028  # the staff note's text height, share of the frame's shorter side
NOTE_MIN_PX = 10
NOTE_MAX_WIDTH = 0.45  # share of the frame's width the note may take
UPDATE_MAX_WIDTH = 0.3  # the update's line: left of the prompt (in the middle of its edge)
_CACHE_SIZE = 16


@dataclass(frozen=True)
class ScreenTexts:
    """The words on the screens (replace for another language)."""

    idle: str = "Step closer"
    camera_lost: str = "Camera disconnected"
    camera_lost_hint: str = "Reconnecting…"
    preparing: str = "Preparing the accelerator"
    preparing_hint: str = "First start: this takes a few minutes"
    first_boot_title: str = "Welcome: set up this mirror"
    device_ip: str = "Device IP"
    admin_url: str = "Admin page"
    password: str = "One-time password"
    fingerprint: str = "Check the browser shows this certificate (SHA-256)"
    cpu_fallback: str = "CPU only: {accelerator} not in use"  # the staff note
    safe_mode: str = "Safe mode: settings file unusable, defaults in use"  # a staff note too
    updating: str = "Updating: {step} — do not unplug"  # {step}: "installing 42%"
    update_failed: str = "Update failed: {message}"
    update_done: str = "Update: {message}"


@dataclass(frozen=True)
class FirstBootInfo:
    """What staff need on first boot to reach the admin page."""

    device_ip: str
    admin_url: str
    one_time_password: str
    fingerprint: str = ""  # the admin page's certificate, ``AB:CD:...``; "" without HTTPS


def update_corner(label_position: str) -> str:
    """Where the update's line goes for a label at ``label_position`` (``LabelSettings``):
    the left corner of the other edge. The label may take its edge's whole width (a long
    venue text); the liveness prompt, the only thing at the other edge, sits in its middle
    and the line, at most ``UPDATE_MAX_WIDTH`` wide, stays left of a prompt of usual length."""
    return "bottom-left" if label_position.startswith("top") else "top-left"


Line = tuple[str, float, tuple[int, int, int]]  # text, height as a fraction of the screen, colour


class Overlays:
    """Renders the screens in one font; ``texts`` sets the words."""

    def __init__(
        self, font_path: Path, texts: ScreenTexts | None = None, problem: str | None = None
    ) -> None:
        self.font_path = Path(font_path)
        self.texts = texts if texts is not None else ScreenTexts()
        # one line for the installer (a bad venue file), under the first-boot and camera screens
        self.problem = problem
        self.staff_note = ""  # one line for staff on the mirror (set while it applies)
        self.update_note = ""  # the update's line (set while it applies)
        self.update_corner = update_corner("bottom-right")  # the label's default position
        self._cache: dict[tuple[object, ...], Image] = {}
        self._font(12)  # fail now, not on first use

    def idle_screen(self, size: tuple[int, int]) -> Image:
        """Shown when nobody is in front of the mirror."""
        return self._screen(size, ((self.texts.idle, 0.09, TEXT_RGB),))

    def camera_lost_screen(self, size: tuple[int, int]) -> Image:
        """Shown while the camera is gone and being reconnected."""
        lines = (
            (self.texts.camera_lost, 0.07, TEXT_RGB),
            (self.texts.camera_lost_hint, 0.04, ACCENT_RGB),
        )
        return self._screen(size, (*lines, *self._problem_line()))

    def preparing_screen(self, size: tuple[int, int]) -> Image:
        """Shown while TensorRT builds its engines at the first start (minutes, once)."""
        lines = (
            (self.texts.preparing, 0.07, TEXT_RGB),
            (self.texts.preparing_hint, 0.04, ACCENT_RGB),
        )
        return self._screen(size, (*lines, *self._problem_line()))

    def first_boot_screen(self, size: tuple[int, int], info: FirstBootInfo) -> Image:
        """Shown until the first admin login: where to go and with which password."""
        t = self.texts
        lines: tuple[Line, ...] = (
            (t.first_boot_title, 0.06, TEXT_RGB),
            (f"{t.device_ip}: {info.device_ip}", 0.045, TEXT_RGB),
            (f"{t.admin_url}: {info.admin_url}", 0.045, ACCENT_RGB),
            (f"{t.password}: {info.one_time_password}", 0.06, ACCENT_RGB),
        )
        if info.fingerprint:  # in two halves, each readable at a glance
            half = len(info.fingerprint) // 2 + 1
            lines += (
                (f"{t.fingerprint}:", 0.035, TEXT_RGB),
                (info.fingerprint[:half].rstrip(":"), 0.035, TEXT_RGB),
                (info.fingerprint[half:], 0.035, TEXT_RGB),
            )
        return self._screen(size, (*lines, *self._problem_line()))

    def draw_staff_note(self, image: Image) -> bool:
        """Write ``staff_note`` small at the left edge, halfway down, into ``image`` (in
        place: callers pass a copy); False when there is no note."""
        note = self.staff_note
        if not note:
            return False
        height, width = image.shape[:2]
        patch = self._note_patch(note, (width, height))
        ph, pw = patch.shape[:2]
        y0 = (height - ph) // 2
        image[y0 : y0 + ph, 0:pw] = patch
        return True

    def draw_update_note(self, image: Image) -> bool:
        """Write ``update_note`` small into ``image``'s ``update_corner`` (in place: callers
        pass a copy); False when there is no note."""
        note, corner = self.update_note, self.update_corner
        if not note:
            return False
        height, width = image.shape[:2]
        patch = self._note_patch(note, (width, height), ACCENT_RGB, UPDATE_MAX_WIDTH)
        ph, pw = patch.shape[:2]
        y0 = 0 if corner.startswith("top") else height - ph
        x0 = 0 if corner.endswith("left") else width - pw
        image[y0 : y0 + ph, x0 : x0 + pw] = patch
        return True

    def _note_patch(
        self,
        text: str,
        size: tuple[int, int],
        rgb: tuple[int, int, int] = WARNING_RGB,
        max_width: float = NOTE_MAX_WIDTH,
    ) -> Image:
        key = ("note", text, size, rgb, max_width)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._render_note(text, size, rgb, max_width)
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = cached
        return cached

    def _render_note(
        self, text: str, size: tuple[int, int], rgb: tuple[int, int, int], max_width: float
    ) -> Image:
        width, height = size
        probe = ImageDraw.Draw(PilImage.new("RGB", (1, 1)))
        text_px = max(NOTE_MIN_PX, round(min(width, height) * NOTE_HEIGHT))
        font = self._fit(probe, text, text_px, width * max_width)
        left, top, right, bottom = (round(v) for v in probe.textbbox((0, 0), text, font=font))
        pad = max(2, (bottom - top) // 3)
        pw = min(width, right - left + 2 * pad)
        ph = min(height, bottom - top + 2 * pad)
        canvas = PilImage.new("RGB", (pw, ph), BACKGROUND_RGB)
        ImageDraw.Draw(canvas).text((pad - left, pad - top), text, font=font, fill=rgb)
        return np.ascontiguousarray(np.asarray(canvas, dtype=np.uint8)[..., ::-1])

    def _problem_line(self) -> tuple[Line, ...]:
        return () if not self.problem else ((self.problem, PROBLEM_HEIGHT, WARNING_RGB),)

    def _screen(self, size: tuple[int, int], lines: tuple[Line, ...]) -> Image:
        key = (size, lines)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._render(size, lines)
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = cached
        return cached.copy()

    def _render(self, size: tuple[int, int], lines: tuple[Line, ...]) -> Image:
        width, height = size
        canvas = PilImage.new("RGB", (width, height), BACKGROUND_RGB)
        draw = ImageDraw.Draw(canvas)
        fitted = [
            (text, self._fit(draw, text, fraction * height, width * 0.9), rgb)
            for text, fraction, rgb in lines
        ]
        gap = round(height * 0.03)
        boxes = [draw.textbbox((0, 0), text, font=font) for text, font, _ in fitted]
        total = sum(b[3] - b[1] for b in boxes) + gap * (len(boxes) - 1)
        y = (height - total) // 2
        for (text, font, rgb), box in zip(fitted, boxes, strict=True):
            x = (width - (box[2] - box[0])) // 2 - box[0]
            draw.text((x, y - box[1]), text, font=font, fill=rgb)
            y += box[3] - box[1] + gap
        rgb_array = np.asarray(canvas, dtype=np.uint8)
        return np.ascontiguousarray(rgb_array[..., ::-1])

    def _fit(
        self, draw: ImageDraw.ImageDraw, text: str, height_px: float, max_width: float
    ) -> ImageFont.FreeTypeFont:
        size = max(8, round(height_px))
        font = self._font(size)
        text_width = draw.textlength(text, font=font)
        if text_width > max_width:
            font = self._font(max(8, int(size * max_width / text_width)))
        return font

    def _font(self, size: int) -> ImageFont.FreeTypeFont:
        try:
            return ImageFont.truetype(str(self.font_path), size)
        except OSError as exc:
            raise ModelError(f"overlay font {self.font_path} cannot be loaded: {exc}") from exc


NOTICE_DIM = 0.45  # the frame behind the cooling notice keeps this much of its brightness
NOTICE_HEIGHT = 0.06  # notice text height as a share of the frame's height


def draw_notice(image: Image, text: str) -> None:
    """Dim ``image`` in place and write ``text`` across its middle (ASCII text)."""
    cv2.convertScaleAbs(image, dst=image, alpha=NOTICE_DIM, beta=0.0)
    height, width = image.shape[:2]
    font = cv2.FONT_HERSHEY_SIMPLEX
    scale = max(0.4, height * NOTICE_HEIGHT / 22.0)  # Hershey simplex caps are ~22 px at 1.0
    thickness = max(1, round(scale * 2))
    (text_w, text_h), _ = cv2.getTextSize(text, font, scale, thickness)
    if text_w > width * 0.9:
        scale *= width * 0.9 / text_w
        thickness = max(1, round(scale * 2))
        (text_w, text_h), _ = cv2.getTextSize(text, font, scale, thickness)
    origin = ((width - text_w) // 2, (height + text_h) // 2)
    cv2.putText(image, text, origin, font, scale, (255, 255, 255), thickness, cv2.LINE_AA)
