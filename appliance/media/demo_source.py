"""A 'camera' made from a still photo: a slow, looping pan, zoom, roll and tilt.

Every frame is one ``cv2.warpPerspective`` of the photo with a homography that
is a pure function of the frame index, so a run is reproducible frame by frame.
The motion loops every ``LOOP_S`` seconds of frames and keeps the point of
interest (``focus``, the face) well inside the view at a usable size.
"""

from __future__ import annotations

import logging
import math

import cv2
import numpy as np
import numpy.typing as npt

from appliance.errors import ConfigError, InputError
from appliance.media.frames import Frame, Image
from appliance.media.pacing import Pacer
from appliance.media.source_base import FrameSource, FrameTimeoutError

logger = logging.getLogger(__name__)

Matrix = npt.NDArray[np.float64]

LOOP_S = 12.0
VIEW_FILL = 0.86  # share of the photo's largest fitting view shown at rest
PAN = (0.06, 0.04)  # pan amplitude, share of the view half-width / half-height
ZOOM = 0.08  # extra zoom-in at the peak
ROLL_DEG = 3.0  # in-plane tilt amplitude
KEYSTONE = (0.03, 0.02)  # perspective tilt amplitude: left/right, top/bottom


def _check_size(size: tuple[int, int], fps: float) -> None:
    if len(size) != 2 or min(size) <= 0:
        raise ConfigError(f"frame size must be (width, height) > 0, got {size}")
    if not fps > 0:
        raise ConfigError(f"frame rate must be > 0, got {fps}")


def _check_image(image: np.ndarray) -> Image:
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise InputError(
            f"demo image must be an HxWx3 uint8 BGR image, got {image.dtype} {image.shape}"
        )
    return image


def _motion(index: int, loop_frames: int) -> tuple[float, float, float, float, float, float]:
    """Pan x/y, zoom, roll (rad), keystone x/y at ``index``: smooth and periodic."""
    t = 2.0 * math.pi * (index % loop_frames) / loop_frames
    pan_x = PAN[0] * math.sin(t)
    pan_y = PAN[1] * math.sin(2.0 * t + 0.5)
    zoom = 1.0 + ZOOM * 0.5 * (1.0 - math.cos(3.0 * t))
    roll = math.radians(ROLL_DEG) * math.sin(t + 1.0)
    key_x = KEYSTONE[0] * math.sin(2.0 * t)
    key_y = KEYSTONE[1] * math.sin(t + 2.0)
    return pan_x, pan_y, zoom, roll, key_x, key_y


def _rest_view(
    photo_size: tuple[int, int], out_size: tuple[int, int], focus: tuple[float, float]
) -> tuple[float, float, float, float]:
    """Centre x/y and half width/height, in photo pixels, of the view at rest."""
    pw, ph = photo_size
    aspect = out_size[0] / out_size[1]
    half_h = VIEW_FILL * min(ph, pw / aspect) / 2.0
    half_w = half_h * aspect
    cx = min(max(focus[0] * pw, half_w), pw - half_w)
    cy = min(max(focus[1] * ph, half_h), ph - half_h)
    return cx, cy, half_w, half_h


def view_transform(
    index: int,
    photo_size: tuple[int, int],
    out_size: tuple[int, int],
    fps: float,
    focus: tuple[float, float] = (0.5, 0.3),
) -> Matrix:
    """The 3x3 homography from photo pixels to output pixels for frame ``index``."""
    cx, cy, half_w, half_h = _rest_view(photo_size, out_size, focus)
    pan_x, pan_y, zoom, roll, key_x, key_y = _motion(index, max(1, round(LOOP_S * fps)))
    unit = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
    u, v = unit[:, 0], unit[:, 1]
    # keystone: the top/bottom edges and left/right edges get unequal lengths
    u_k, v_k = u * (1.0 + key_y * v), v * (1.0 + key_x * u)
    x, y = u_k * half_w / zoom, v_k * half_h / zoom
    cos_r, sin_r = math.cos(roll), math.sin(roll)
    quad = np.stack(
        [
            cx + pan_x * half_w + cos_r * x - sin_r * y,
            cy + pan_y * half_h + sin_r * x + cos_r * y,
        ],
        axis=1,
    ).astype(np.float32)
    w, h = out_size
    corners = np.array([[0, 0], [w, 0], [w, h], [0, h]], dtype=np.float32)
    return cv2.getPerspectiveTransform(quad, corners).astype(np.float64)


class DemoSource(FrameSource):
    """Frames of a still photo seen by a slowly moving virtual camera.

    ``paced`` holds ``fps`` in real time, otherwise frames come as fast as
    they are made; ``frames`` ends the stream after that many frames.
    ``focus`` is the point of interest as shares of the photo's width and
    height (the face of a portrait sits in the upper middle).
    """

    def __init__(
        self,
        image_bgr: np.ndarray,
        size: tuple[int, int] = (640, 480),
        fps: float = 30.0,
        paced: bool = True,
        frames: int | None = None,
        *,
        focus: tuple[float, float] = (0.5, 0.3),
    ) -> None:
        _check_size(size, fps)
        if frames is not None and frames < 0:
            raise ConfigError(f"frames must be >= 0 or None, got {frames}")
        super().__init__(size=(int(size[0]), int(size[1])), fps=float(fps))
        self._image = _check_image(image_bgr)
        self.paced = paced
        self.frames = frames
        self.focus = focus
        self._pacer = Pacer(self.fps)

    def __repr__(self) -> str:
        w, h = self.size
        return f"DemoSource({w}x{h} @ {self.fps:g} fps)"

    def transform(self, index: int) -> Matrix:
        """The homography (photo to output pixels) used for frame ``index``."""
        h, w = self._image.shape[:2]
        return view_transform(index, (w, h), self.size, self.fps, self.focus)

    def render(self, index: int) -> Image:
        """The output image of frame ``index``."""
        return cv2.warpPerspective(  # type: ignore[return-value]
            self._image,
            self.transform(index),
            self.size,
            flags=cv2.INTER_LINEAR,
            borderMode=cv2.BORDER_REPLICATE,
        )

    def _on_start(self) -> None:
        self._pacer.reset()

    def _read(self, timeout_s: float | None) -> Frame | None:
        if self.frames is not None and self._next_index >= self.frames:
            return None
        if self.paced:
            if not self._pacer.wait(timeout_s):
                raise FrameTimeoutError(f"{self!r}: no frame due within {timeout_s} s")
            self._pacer.mark()
        return self._make_frame(self.render(self._next_index))
