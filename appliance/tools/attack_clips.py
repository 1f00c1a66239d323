"""Presentation-attack clips: a printed photo moved in front of a virtual camera.

Each frame projects the photo, as a flat sheet in 3-D, through a pinhole
camera (focal length = frame width, about 53 degrees across): the sheet is
panned, moved nearer and farther (zoom), rolled, and tilted about both of
its axes (yaw and pitch, up to ``tilt_deg``), which is the perspective tilt a
hand gives a photo. A small fast tremor rides on the slow motion, as a hand
holding a sheet does. Then the camera adds blur (Gaussian, its sigma
drifting between ``blur_sigma``) and noise (Gaussian, ``noise_sigma`` grey
levels; drawn from a bank of pre-made noise images to stay cheap).

The motion of each parameter is a sum of two sines whose frequencies and
phases come from ``seed``, so a clip is reproducible frame by frame and
different seeds move differently. Frames are made on the fly; nothing is
written to disk.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from appliance.errors import InputError
from appliance.media.frames import Image

logger = logging.getLogger(__name__)

F64 = npt.NDArray[np.float64]

NOISE_BANK = 16  # pre-made noise images a clip picks from, frame by frame
TREMOR_HZ = (3.0, 5.0)  # hand tremor frequency range
BACKGROUND_CELLS = 12  # coarseness of the random background behind the sheet


@dataclass(frozen=True)
class AttackMotion:
    """How far the sheet moves. Shares are of the frame's width/height; angles in degrees."""

    tilt_deg: float = 25.0  # yaw and pitch of the sheet
    roll_deg: float = 15.0
    pan: tuple[float, float] = (0.22, 0.18)  # face centre offset from the frame centre
    face_height: float = 0.32  # face box height at rest, share of the frame height
    zoom: float = 0.35  # face size varies by this share either way
    tremor_deg: float = 1.0  # hand tremor amplitude (rotation)
    noise_sigma: float = 4.0  # camera noise, grey levels
    blur_sigma: tuple[float, float] = (0.5, 2.0)  # camera blur range, pixels


class _Wave:
    """A smooth signal in [-1, 1]: two seeded sines (and a tremor) over time in seconds."""

    def __init__(
        self, rng: np.random.Generator, low_hz: float = 0.04, high_hz: float = 0.35
    ) -> None:
        self.freqs = rng.uniform(low_hz, high_hz, 2)
        self.phases = rng.uniform(0.0, 2.0 * math.pi, 2)
        self.tremor_hz = rng.uniform(*TREMOR_HZ)
        self.tremor_phase = rng.uniform(0.0, 2.0 * math.pi)

    def __call__(self, t_s: float) -> float:
        (fa, fb), (pa, pb) = self.freqs, self.phases
        a = math.sin(2.0 * math.pi * fa * t_s + pa)
        b = math.sin(2.0 * math.pi * fb * t_s + pb)
        return 0.65 * a + 0.35 * b

    def tremor(self, t_s: float) -> float:
        return math.sin(2.0 * math.pi * self.tremor_hz * t_s + self.tremor_phase)


def _rotation(yaw: float, pitch: float, roll: float) -> F64:
    """Roll (about the view axis) after pitch (x) after yaw (y); radians."""
    cy, sy, cp, sp, cr, sr = (f(a) for a in (yaw, pitch, roll) for f in (math.cos, math.sin))
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rx = np.array([[1, 0, 0], [0, cp, -sp], [0, sp, cp]])
    rz = np.array([[cr, -sr, 0], [sr, cr, 0], [0, 0, 1]])
    out: F64 = rz @ rx @ ry
    return out


def sheet_homography(
    face: tuple[float, float, float],
    size: tuple[int, int],
    rotation: F64,
    offset: tuple[float, float],
    face_px: float,
) -> F64:
    """Photo pixels to frame pixels for a sheet turned by ``rotation``.

    ``face``: the face centre x, y and height in photo pixels; it lands at
    ``offset`` pixels from the frame centre, ``face_px`` high (before tilt).
    """
    w, h = size
    focal = float(w)
    camera = np.array([[focal, 0, w / 2], [0, focal, h / 2], [0, 0, 1]])
    scale = face_px / (focal * face[2])  # sheet units per photo pixel at depth 1
    shift = np.array([offset[0] / focal, offset[1] / focal, 1.0])
    centre = rotation @ np.array([face[0] * scale, face[1] * scale, 0.0])
    plane = np.column_stack([rotation[:, 0] * scale, rotation[:, 1] * scale, shift - centre])
    out: F64 = camera @ plane
    out /= out[2, 2]
    return out


class PhotoAttack:
    """``frames()`` yields a clip of ``photo`` moved as ``motion`` says."""

    def __init__(
        self,
        photo: Image,
        face_box: tuple[float, float, float, float],
        *,
        size: tuple[int, int] = (640, 480),
        fps: float = 30.0,
        motion: AttackMotion | None = None,
        seed: int = 0,
    ) -> None:
        if photo.dtype != np.uint8 or photo.ndim != 3 or photo.shape[2] != 3:
            raise InputError(f"attack photo must be HxWx3 uint8 BGR, got {photo.shape}")
        x0, y0, x1, y1 = face_box
        if x1 <= x0 or y1 <= y0:
            raise InputError(f"attack face box {face_box} is empty")
        self.photo = photo
        self.face = ((x0 + x1) / 2, (y0 + y1) / 2, y1 - y0)
        self.size = size
        self.fps = fps
        self.motion = motion or AttackMotion()
        rng = np.random.default_rng(seed)
        self._waves = [_Wave(rng) for _ in range(7)]  # yaw pitch roll x y zoom blur
        self._rng = rng
        self._noise = self._noise_bank()
        self._background = self._make_background()

    def frames(self, count: int) -> Iterator[Image]:
        """The first ``count`` frames."""
        for index in range(count):
            yield self.render(index)

    def homography(self, index: int) -> F64:
        """Photo to frame pixels at frame ``index``."""
        t = index / self.fps
        m = self.motion
        yaw_w, pitch_w, roll_w, x_w, y_w, zoom_w, _ = self._waves
        shake = math.radians(m.tremor_deg)
        yaw = math.radians(m.tilt_deg) * yaw_w(t) + shake * yaw_w.tremor(t)
        pitch = math.radians(m.tilt_deg) * pitch_w(t) + shake * pitch_w.tremor(t)
        roll = math.radians(m.roll_deg) * roll_w(t) + shake * roll_w.tremor(t)
        w, h = self.size
        offset = (m.pan[0] * w * x_w(t), m.pan[1] * h * y_w(t))
        face_px = m.face_height * h * (1.0 + m.zoom * zoom_w(t))
        return sheet_homography(self.face, self.size, _rotation(yaw, pitch, roll), offset, face_px)

    def render(self, index: int) -> Image:
        """Frame ``index``: the sheet over the background, blurred, with noise."""
        matrix = self.homography(index)
        sheet = cv2.warpPerspective(self.photo, matrix, self.size, flags=cv2.INTER_LINEAR)
        mask = cv2.warpPerspective(
            np.full(self.photo.shape[:2], 255, np.uint8), matrix, self.size, flags=cv2.INTER_NEAREST
        )
        frame = self._background.copy()
        np.copyto(frame, sheet, where=(mask > 0)[..., None])
        low, high = self.motion.blur_sigma
        sigma = low + (high - low) * 0.5 * (1.0 + self._waves[6](index / self.fps))
        blurred = cv2.GaussianBlur(frame, (0, 0), sigma)
        noise = self._noise[int(self._rng.integers(len(self._noise)))]
        noisy = blurred.astype(np.int16) + noise
        out: Image = np.clip(noisy, 0, 255).astype(np.uint8)
        return out

    def _noise_bank(self) -> list[npt.NDArray[np.int16]]:
        w, h = self.size
        sigma = self.motion.noise_sigma
        return [
            np.rint(self._rng.normal(0.0, sigma, (h, w, 3))).astype(np.int16)
            for _ in range(NOISE_BANK)
        ]

    def _make_background(self) -> Image:
        """A soft random pattern of muted tones, like an out-of-focus room behind the sheet."""
        w, h = self.size
        grey = self._rng.integers(50, 190, (BACKGROUND_CELLS, BACKGROUND_CELLS, 1))
        tint = self._rng.integers(-20, 21, (BACKGROUND_CELLS, BACKGROUND_CELLS, 3))
        cells = np.clip(grey + tint, 0, 255).astype(np.uint8)
        out: Image = cv2.resize(cells, (w, h), interpolation=cv2.INTER_CUBIC)
        return out
