"""Real visitors the gate was not tuned on: the real videos re-timed, mirrored, far, noisy, moving.

Each ``Variant`` turns a real clip (frames in memory, its frame rate) into
another clip a camera could have given of the same person, with the
timestamp of every frame (seconds, from the original's clock):

- ``original``: as recorded;
- ``15fps``: re-timed to 15 frames a second (the frame nearest each tick);
- ``dropped``: a third of the frames dropped at random (a busy camera), the
  others at their own times;
- ``mirrored``: flipped left to right;
- ``far``: scaled down so the face is ``FAR_FACE_PX`` high, on a soft
  background in a 640x480 frame (a visitor at the back of the room);
- ``noisy``: camera noise (Gaussian, ``NOISE_SIGMA`` grey levels) and motion
  blur (a line kernel of ``BLUR_PX`` pixels whose angle drifts);
- ``moving``: a moving crop (``CROP_SHARE`` of the frame, panned about by two
  slow sines, resized back): the head moves in the picture;
- ``hard``: mirrored, 15 fps, noisy and moving together.

Everything is made in memory from the shared videos: nothing is written.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import cv2
import numpy as np

from appliance.errors import InputError
from appliance.media.frames import Image

logger = logging.getLogger(__name__)

FAR_FACE_PX = 80.0  # face height of the far visitor (landmark box; about 68 px wide), pixels
FAR_SIZE = (640, 480)
NOISE_SIGMA = 6.0
BLUR_PX = 7
CROP_SHARE = 0.7
DROP_SHARE = 1.0 / 3.0
RETIMED_FPS = 15.0

Timed = tuple[float, Image]  # a frame's time (seconds) and image
Stream = Iterator[Timed]


def _retimed(frames: Stream, fps: float) -> Stream:
    """Only the first frame of each ``1/fps`` tick (at its own time)."""
    last = -1
    for t_s, image in frames:
        tick = math.floor(t_s * fps + 1e-6)
        if tick > last:
            last = tick
            yield t_s, image


def _dropped(frames: Stream, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    for index, (t_s, image) in enumerate(frames):
        if index == 0 or rng.random() >= DROP_SHARE:
            yield t_s, image


def _background(size: tuple[int, int], seed: int) -> Image:
    rng = np.random.default_rng(seed)
    cells = rng.integers(60, 180, (9, 12, 3)).astype(np.uint8)
    out: Image = np.asarray(cv2.resize(cells, size, interpolation=cv2.INTER_CUBIC), np.uint8)
    return out


def far_frame(image: Image, scale: float, background: Image) -> Image:
    """``image`` scaled by ``scale`` onto the middle of ``background`` (a copy)."""
    h, w = image.shape[:2]
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    small = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    out = background.copy()
    bh, bw = out.shape[:2]
    sh, sw = min(small.shape[0], bh), min(small.shape[1], bw)
    y0, x0 = (bh - sh) // 2, (bw - sw) // 3
    out[y0 : y0 + sh, x0 : x0 + sw] = small[:sh, :sw]
    return out


def _flip(image: Image) -> Image:
    out: Image = np.ascontiguousarray(image[:, ::-1])
    return out


def _noisy(image: Image, index: int, rng: np.random.Generator) -> Image:
    angle = 40.0 * math.sin(index / 9.0) + 20.0
    line = np.zeros((BLUR_PX, BLUR_PX), np.float32)
    line[BLUR_PX // 2, :] = 1.0 / BLUR_PX
    centre = (BLUR_PX / 2 - 0.5, BLUR_PX / 2 - 0.5)
    turn = cv2.getRotationMatrix2D(centre, angle, 1.0)
    kernel = np.asarray(cv2.warpAffine(line, turn, (BLUR_PX, BLUR_PX)), np.float32)
    kernel /= max(float(kernel.sum()), 1e-6)
    blurred = cv2.filter2D(image, -1, kernel)
    noise = rng.normal(0.0, NOISE_SIGMA, image.shape)
    out: Image = np.clip(blurred + noise, 0, 255).astype(np.uint8)
    return out


def _moving(image: Image, t_s: float) -> Image:
    h, w = image.shape[:2]
    cw, ch = round(w * CROP_SHARE), round(h * CROP_SHARE)
    fx = 0.5 + 0.5 * (0.7 * math.sin(2 * math.pi * 0.23 * t_s) + 0.3 * math.sin(2.1 * t_s + 1))
    fy = 0.5 + 0.5 * (0.6 * math.sin(2 * math.pi * 0.17 * t_s + 2) + 0.4 * math.sin(1.3 * t_s))
    x0, y0 = round((w - cw) * fx), round((h - ch) * fy)
    crop = image[y0 : y0 + ch, x0 : x0 + cw]
    out: Image = np.ascontiguousarray(cv2.resize(crop, (w, h), interpolation=cv2.INTER_LINEAR))
    return out


@dataclass(frozen=True)
class Variant:
    """One way of re-shooting a clip: ``apply(frames, face_px)`` maps a stream of
    (seconds, image) to another; ``face_px`` is the clip's face height (for ``far``)."""

    name: str
    apply: Callable[[Stream, float], Stream]


def _original(frames: Stream, face_px: float) -> Stream:
    return frames


def _fifteen(frames: Stream, face_px: float) -> Stream:
    return _retimed(frames, RETIMED_FPS)


def _some_dropped(frames: Stream, face_px: float) -> Stream:
    return _dropped(frames, seed=7)


def _mirrored(frames: Stream, face_px: float) -> Stream:
    return ((t, _flip(f)) for t, f in frames)


def _far(frames: Stream, face_px: float) -> Stream:
    if face_px <= 0:
        raise InputError("the far variant needs the clip's face height")
    background = _background(FAR_SIZE, seed=3)
    scale = FAR_FACE_PX / face_px
    return ((t, far_frame(f, scale, background)) for t, f in frames)


def _noisy_clip(frames: Stream, face_px: float) -> Stream:
    rng = np.random.default_rng(5)
    return ((t, _noisy(f, i, rng)) for i, (t, f) in enumerate(frames))


def _moving_clip(frames: Stream, face_px: float) -> Stream:
    return ((t, _moving(f, t)) for t, f in frames)


def _hard(frames: Stream, face_px: float) -> Stream:
    rng = np.random.default_rng(9)
    picked = _retimed(frames, RETIMED_FPS)
    return ((t, _noisy(_moving(_flip(f), t), i, rng)) for i, (t, f) in enumerate(picked))


VARIANTS: tuple[Variant, ...] = (
    Variant("original", _original),
    Variant("15fps", _fifteen),
    Variant("dropped", _some_dropped),
    Variant("mirrored", _mirrored),
    Variant("far", _far),
    Variant("noisy", _noisy_clip),
    Variant("moving", _moving_clip),
    Variant("hard", _hard),
)


def variant(name: str) -> Variant:
    """The variant called ``name``."""
    for v in VARIANTS:
        if v.name == name:
            return v
    names = ", ".join(v.name for v in VARIANTS)
    raise InputError(f"no real-clip variant {name!r} (one of {names})")
