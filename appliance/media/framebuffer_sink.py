"""Frames on an HDMI screen through the Linux framebuffer (``/dev/fb0``, mmap).

The geometry comes from sysfs (``/sys/class/graphics/fb0/``): ``virtual_size``
("1920,1080"), ``bits_per_pixel`` (16 or 32) and ``stride`` (bytes per line,
which may be more than width x bytes per pixel). Each frame is letterboxed to
the screen and converted from BGR to RGB565 (little-endian, red in the top
five bits) or XRGB8888 (bytes B, G, R, X in memory), then copied into the
mapped memory line by line. ``stop()`` blanks the screen.

Mirroring is done at capture (see ``mirrored_source``) so the AI label and
prompts drawn later read the right way round; ``flip`` here is for a screen
behind a half-silvered mirror glass, where the whole picture must flip.
"""

from __future__ import annotations

import logging
import mmap
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from appliance.errors import OutputError
from appliance.media.letterbox import letterbox
from appliance.media.sink_base import FrameSink
from appliance.pipeline.frames import Frame, Image

logger = logging.getLogger(__name__)

SYSFS_GRAPHICS = Path("/sys/class/graphics")
SUPPORTED_BPP = (16, 32)


@dataclass(frozen=True)
class FramebufferGeometry:
    """What sysfs says about one framebuffer."""

    width: int
    height: int
    bits_per_pixel: int
    stride: int

    @property
    def bytes_per_pixel(self) -> int:
        return self.bits_per_pixel // 8

    @property
    def map_bytes(self) -> int:
        return self.stride * self.height


def _read_sysfs(sysfs_dir: Path, name: str) -> str:
    try:
        return (sysfs_dir / name).read_text().strip()
    except OSError as exc:
        raise OutputError(f"framebuffer {sysfs_dir / name} cannot be read: {exc}") from exc


def read_geometry(sysfs_dir: Path) -> FramebufferGeometry:
    """The framebuffer's size, depth and stride from its sysfs directory."""
    size_text = _read_sysfs(sysfs_dir, "virtual_size")
    try:
        width, height = (int(part) for part in size_text.split(","))
        bpp = int(_read_sysfs(sysfs_dir, "bits_per_pixel"))
        stride = int(_read_sysfs(sysfs_dir, "stride"))
    except ValueError as exc:
        raise OutputError(f"framebuffer {sysfs_dir} has unreadable geometry: {exc}") from exc
    if bpp not in SUPPORTED_BPP:
        raise OutputError(
            f"framebuffer {sysfs_dir} has {bpp} bits per pixel; only 16 and 32 are supported "
            "(set another depth with fbset, or use the sdl display)"
        )
    if width <= 0 or height <= 0 or stride < width * bpp // 8:
        raise OutputError(f"framebuffer {sysfs_dir}: bad geometry {width}x{height} stride {stride}")
    return FramebufferGeometry(width, height, bpp, stride)


def bgr_to_rgb565(image: Image) -> npt.NDArray[np.uint16]:
    """HxW little-endian RGB565 words (R in bits 15-11, G 10-5, B 4-0)."""
    b = image[..., 0].astype(np.uint16) >> 3
    g = image[..., 1].astype(np.uint16) >> 2
    r = image[..., 2].astype(np.uint16) >> 3
    return ((r << 11) | (g << 5) | b).astype("<u2")


def bgr_to_xrgb8888(image: Image) -> Image:
    """HxWx4 bytes B, G, R, X (X = 255), the in-memory order of little-endian XRGB8888."""
    out = np.full((*image.shape[:2], 4), 255, np.uint8)
    out[..., :3] = image
    return out


class FramebufferSink(FrameSink):
    """Shows frames full screen on ``device`` (default ``/dev/fb0``)."""

    def __init__(
        self,
        device: str | Path = "/dev/fb0",
        *,
        sysfs_dir: Path | None = None,
        flip: bool = False,
    ) -> None:
        super().__init__()
        self.device = Path(device)
        self.sysfs_dir = sysfs_dir if sysfs_dir is not None else SYSFS_GRAPHICS / self.device.name
        self.flip = flip
        self.geometry: FramebufferGeometry | None = None
        self._fd: int | None = None
        self._map: mmap.mmap | None = None
        self._lines: Image | None = None  # the mapped memory as height x stride bytes

    def __repr__(self) -> str:
        return f"FramebufferSink({str(self.device)!r})"

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the screen; known after ``start()``."""
        if self.geometry is None:
            raise RuntimeError(f"{self!r}: the size is known after start()")
        return self.geometry.width, self.geometry.height

    def _on_start(self) -> None:
        geometry = read_geometry(self.sysfs_dir)
        try:
            fd = os.open(self.device, os.O_RDWR)
        except OSError as exc:
            raise OutputError(
                f"framebuffer {self.device} cannot be opened: {exc.strerror} "
                "(is the user in the video group?)"
            ) from exc
        try:
            mapped = mmap.mmap(fd, geometry.map_bytes, mmap.MAP_SHARED, mmap.PROT_WRITE)
        except (OSError, ValueError) as exc:
            os.close(fd)
            raise OutputError(f"framebuffer {self.device} cannot be mapped: {exc}") from exc
        self._fd, self._map, self.geometry = fd, mapped, geometry
        lines = np.frombuffer(mapped, np.uint8).reshape(geometry.height, geometry.stride)
        self._lines = lines
        logger.info(
            "framebuffer %s: %sx%s, %s bpp, stride %s",
            self.device,
            geometry.width,
            geometry.height,
            geometry.bits_per_pixel,
            geometry.stride,
        )

    def _write(self, frame: Frame) -> None:
        self.show(frame.image)

    def show(self, image: Image) -> None:
        """Letterbox a BGR image to the screen and copy it in (no frame count)."""
        geometry, lines = self.geometry, self._lines
        if geometry is None or lines is None:
            raise RuntimeError(f"cannot show: {self!r} is not started")
        screen = letterbox(image, (geometry.width, geometry.height))
        if self.flip:
            screen = np.ascontiguousarray(screen[:, ::-1])
        row_bytes = geometry.width * geometry.bytes_per_pixel
        if geometry.bits_per_pixel == 16:
            pixels = bgr_to_rgb565(screen).view(np.uint8)
        else:
            pixels = bgr_to_xrgb8888(screen)
        lines[:, :row_bytes] = pixels.reshape(geometry.height, row_bytes)

    def _on_stop(self) -> None:
        lines, mapped, fd = self._lines, self._map, self._fd
        self._lines, self._map, self._fd = None, None, None
        if lines is not None:
            lines[:] = 0  # a blank screen, not the last frame frozen
            del lines
        if mapped is not None:
            mapped.close()
        if fd is not None:
            os.close(fd)
