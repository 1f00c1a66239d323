"""Slide-over attacks: a real visitor blinks, then slides a printed photo over their face.

The clip is a real video (played back and forth when it is too short) up to
``start_s``; then a photo, cut around its face, slides in from the left
over ``SLIDE_S`` seconds (eased) until its face covers the visitor's face,
``COVER`` times as high and centred on it (or, ``from_below``, is raised
from under the frame, as fast as ``slide_s`` says); then it stays there for
``HOLD_S`` seconds with a hand's tremor (a small sway and roll). The photo
is softened like a print seen by a camera, and the whole frame gets camera
noise. ``covered_s`` is when the photo's face is in place: a gate must have
refused the face within a second of it.

Where the visitor's face is comes from ``locate`` (an analyser's face box),
asked once, on the frame at ``start_s``. Frames are made on the fly.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator

import cv2
import numpy as np

from appliance.errors import InputError
from appliance.media.frames import Image

logger = logging.getLogger(__name__)

Box = tuple[float, float, float, float]
Timed = tuple[float, Image]

SLIDE_S = 0.4  # from the frame's edge to covering the face
HOLD_S = 4.0  # the photo held over the face afterwards
COVER = 1.15  # the photo's face height over the visitor's
MARGIN = (0.75, 0.9)  # photo cut around its face: this many face widths/heights each side
TREMOR_PX = 0.015  # sway, share of the face height
TREMOR_DEG = 2.0
NOISE_SIGMA = 3.0


def _cut(photo: Image, face: Box) -> tuple[Image, float, tuple[float, float]]:
    """The photo cut around its face: the cut, the face height, the face centre in the cut."""
    x0, y0, x1, y1 = face
    if x1 <= x0 or y1 <= y0:
        raise InputError(f"slide-over face box {face} is empty")
    fw, fh = x1 - x0, y1 - y0
    h, w = photo.shape[:2]
    cx0, cy0 = max(0, int(x0 - MARGIN[0] * fw)), max(0, int(y0 - MARGIN[1] * fh))
    cx1, cy1 = min(w, int(x1 + MARGIN[0] * fw)), min(h, int(y1 + MARGIN[1] * fh))
    cut = np.ascontiguousarray(photo[cy0:cy1, cx0:cx1])
    return cut, fh, ((x0 + x1) / 2 - cx0, (y0 + y1) / 2 - cy0)


def _ease(share: float) -> float:
    share = min(1.0, max(0.0, share))
    return 0.5 - 0.5 * math.cos(math.pi * share)


def back_and_forth(frames: list[Image], fps: float, length_s: float) -> Iterator[Timed]:
    """``frames`` played forwards, backwards, forwards... for ``length_s`` seconds."""
    if not frames:
        return
    cycle = list(range(len(frames))) + list(range(len(frames) - 2, 0, -1))
    for index in range(round(length_s * fps)):
        yield index / fps, frames[cycle[index % len(cycle)]]


class SlideOver:
    """A real clip with ``photo`` slid over the visitor's face from ``start_s``."""

    def __init__(
        self,
        photo: Image,
        photo_face: Box,
        start_s: float,
        *,
        seed: int = 0,
        slide_s: float = SLIDE_S,
        from_below: bool = False,
    ) -> None:
        self.cut, self.face_h, self.face_at = _cut(photo, photo_face)
        self.start_s = start_s
        self.slide_s = slide_s
        self.from_below = from_below
        self.covered_s = start_s + slide_s
        self.end_s = self.covered_s + HOLD_S
        self._rng = np.random.default_rng(seed)
        self._phase = float(self._rng.uniform(0, 2 * math.pi))
        self._soft = cv2.GaussianBlur(self.cut, (0, 0), 0.8)

    def frames(
        self, real: Iterator[Timed], locate: Callable[[Image], Box | None]
    ) -> Iterator[Timed]:
        """``real`` frames up to ``end_s``, with the photo over the face from ``start_s``."""
        target: Box | None = None
        for t_s, image in real:
            if t_s > self.end_s:
                return
            if t_s < self.start_s:
                yield t_s, image
                continue
            if target is None:
                target = locate(image)
                if target is None:
                    raise InputError(f"no face to slide a photo over at {t_s:.2f} s")
            yield t_s, self.render(image, target, t_s)

    def matrix(self, target: Box, t_s: float, size: tuple[int, int]) -> np.ndarray:
        """Cut pixels to frame pixels at ``t_s`` in a frame of ``size`` (width, height)."""
        x0, y0, x1, y1 = target
        scale = COVER * (y1 - y0) / self.face_h
        away = 1.0 - _ease((t_s - self.start_s) / self.slide_s)
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        if self.from_below:
            cy += away * (size[1] + (y1 - y0))
        else:
            cx -= away * (size[0] + (x1 - x0))
        sway = TREMOR_PX * (y1 - y0)
        phase = 2 * math.pi * 4.0 * t_s + self._phase
        cx += sway * math.sin(phase)
        cy += sway * math.cos(1.3 * phase)
        angle = TREMOR_DEG * math.sin(0.7 * phase)
        rot = cv2.getRotationMatrix2D(self.face_at, angle, scale)
        rot[0, 2] += cx - self.face_at[0]
        rot[1, 2] += cy - self.face_at[1]
        return rot

    def render(self, image: Image, target: Box, t_s: float) -> Image:
        h, w = image.shape[:2]
        rot = self.matrix(target, t_s, (w, h))
        sheet = cv2.warpAffine(self._soft, rot, (w, h), flags=cv2.INTER_LINEAR)
        mask = cv2.warpAffine(
            np.full(self.cut.shape[:2], 255, np.uint8), rot, (w, h), flags=cv2.INTER_NEAREST
        )
        out = image.copy()
        np.copyto(out, sheet, where=(mask > 0)[..., None])
        noise = self._rng.normal(0.0, NOISE_SIGMA, out.shape)
        noisy: Image = np.clip(out + noise, 0, 255).astype(np.uint8)
        return noisy
