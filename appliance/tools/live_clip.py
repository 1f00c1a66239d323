"""A live MJPG camera emulated from a clip held in memory as JPEG bytes.

Frame ``k`` is "captured" at ``t0 + k / fps`` (``t0`` = ``start()``), whether
anyone reads it or not. The emulated driver keeps one buffer and the newest
frame wins: ``read()`` returns the newest frame captured so far that was not
returned yet, and every older unread frame is lost (``frames_skipped``).
Each read decodes one JPEG as the camera source does (``media.jpeg_halves``),
so it costs what an MJPG camera's decode costs, and a clip of a few hundred
frames stays a few MiB. The JPEGs carry a restart marker at the end of every
MCU row, as many webcams' do (``media.jpeg_restarts``), so a large frame is
decoded in two halves at once, as such a camera's is (``restarts=False``:
every frame is decoded whole, as a camera's without them). A returned frame's
``capture_ns`` is its scheduled capture time (monotonic), not the time it was
read; its ``index`` is its number in the stream (the clip loops).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import cv2
import numpy as np

from appliance.errors import ConfigError, InputError
from appliance.media.frames import Frame, Image
from appliance.media.jpeg import decode_jpeg
from appliance.media.jpeg_halves import HalvesDecoder
from appliance.media.source_base import FrameSource, FrameTimeoutError
from appliance.timing import add_stage_ms

logger = logging.getLogger(__name__)

JPEG_QUALITY = 90
MCU_WIDTH = 16  # OpenCV's JPEGs are 4:2:0: 16x16-pixel MCUs


@dataclass(frozen=True)
class JpegClip:
    """Same-sized frames as JPEG bytes; ``size`` is (width, height)."""

    jpegs: tuple[bytes, ...]
    size: tuple[int, int]

    @classmethod
    def from_images(cls, images: Iterable[Image], quality: int = JPEG_QUALITY) -> JpegClip:
        """Encode ``images`` one by one (a generator keeps only one decoded frame alive)."""
        jpegs: list[bytes] = []
        shape: tuple[int, ...] | None = None
        for image in images:
            shape = shape or image.shape
            if image.shape != shape or image.dtype != np.uint8 or len(shape) != 3:
                raise InputError(f"clip images must all be {shape} uint8 BGR, got {image.shape}")
            per_row = -(-image.shape[1] // MCU_WIDTH)  # a restart marker after every MCU row
            params = [cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_RST_INTERVAL, per_row]
            ok, data = cv2.imencode(".jpg", image, params)
            if not ok:
                raise InputError("cannot JPEG-encode a clip image")
            jpegs.append(data.tobytes())
        if shape is None:
            raise ConfigError("a clip needs at least one image")
        return cls(tuple(jpegs), (int(shape[1]), int(shape[0])))

    def __len__(self) -> int:
        return len(self.jpegs)

    def jpeg(self, index: int) -> bytes:
        """Frame ``index``'s JPEG (modulo the clip length: the clip loops)."""
        return self.jpegs[index % len(self.jpegs)]

    def decode(self, index: int, decoder: Callable[[bytes], Image | None] = decode_jpeg) -> Image:
        """Frame ``index`` (modulo the clip length) as a BGR image, by ``decoder``."""
        image = decoder(self.jpeg(index))
        if image is None:
            raise InputError(f"clip frame {index} does not decode")
        return image

    @property
    def nbytes(self) -> int:
        return sum(len(j) for j in self.jpegs)


class LiveClipSource(FrameSource):
    """A paced, newest-frame-wins 'camera' that plays ``clip`` at ``fps``.

    ``clip``: a ``JpegClip`` or the images to encode into one. ``frames``:
    the stream ends after this many frames (default: the clip's length),
    looping the clip to reach it. ``frames_read`` counts the frames returned,
    ``frames_skipped`` those lost unread before a newer one was returned,
    ``frames_offered`` those captured so far (or by ``stop()``).
    ``restarts=False`` decodes every frame whole (``decoder`` counts how
    frames were decoded).
    """

    def __init__(
        self,
        clip: JpegClip | Iterable[Image],
        fps: float = 30.0,
        frames: int | None = None,
        *,
        restarts: bool = True,
    ) -> None:
        if not fps > 0:
            raise ConfigError(f"frame rate must be > 0, got {fps}")
        if frames is not None and frames < 0:
            raise ConfigError(f"frames must be >= 0 or None, got {frames}")
        self.clip = clip if isinstance(clip, JpegClip) else JpegClip.from_images(clip)
        super().__init__(size=self.clip.size, fps=float(fps))
        self.frames = len(self.clip) if frames is None else frames
        self.period_ns = round(1e9 / self.fps)
        self.frames_read = 0
        self.frames_skipped = 0
        self._t0_ns = 0
        self._stop_ns = 0
        self.restarts = restarts
        self.decoder = HalvesDecoder("capture-jpeg")

    def __repr__(self) -> str:
        w, h = self.size
        return f"LiveClipSource({len(self.clip)} frames {w}x{h} @ {self.fps:g} fps)"

    @property
    def frames_offered(self) -> int:
        """Frames captured (read or not) since ``start()``, up to now or ``stop()``."""
        if not self._t0_ns:
            return 0
        now_ns = time.monotonic_ns() if self.started else self._stop_ns
        return min(self.frames, self._captured(now_ns))

    def due_ns(self, index: int) -> int:
        """The scheduled capture time of frame ``index`` (monotonic ns)."""
        return self._t0_ns + index * self.period_ns

    def _captured(self, now_ns: int) -> int:
        return max(0, (now_ns - self._t0_ns) // self.period_ns + 1)

    def _on_start(self) -> None:
        self._t0_ns = time.monotonic_ns()
        self._next_index = 0
        self.frames_read = self.frames_skipped = 0
        self.decoder = HalvesDecoder("capture-jpeg")

    def _on_stop(self) -> None:
        self._stop_ns = time.monotonic_ns()
        self.decoder.close()

    def _read(self, timeout_s: float | None) -> Frame | None:
        if self._next_index >= self.frames:
            return None
        index = min(self.frames, self._captured(time.monotonic_ns())) - 1
        if index < self._next_index:  # nothing new yet: wait for the next capture
            index = self._next_index
            self._wait_until(self.due_ns(index), timeout_s)
        self.frames_skipped += index - self._next_index
        self._next_index = index + 1
        self.frames_read += 1
        start = time.perf_counter()
        decoder = self.decoder.decode if self.restarts else decode_jpeg
        image, encoded = self.clip.decode(index, decoder), self.clip.jpeg(index)
        frame = Frame(image, index, self.due_ns(index), encoded=encoded)
        add_stage_ms(frame.timings_ms, "decode", start)
        return frame

    def _wait_until(self, due_ns: int, timeout_s: float | None) -> None:
        delay_s = max(0, due_ns - time.monotonic_ns()) / 1e9
        if timeout_s is not None and delay_s > timeout_s:
            time.sleep(max(0.0, timeout_s))
            raise FrameTimeoutError(f"{self!r}: no frame due within {timeout_s} s")
        if delay_s > 0:
            time.sleep(delay_s)
