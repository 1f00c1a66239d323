"""Frames on an HDMI screen through the Linux framebuffer (``/dev/fb0``, mmap).

The geometry is the visible one the kernel reports on the opened device
(``FBIOGET_VSCREENINFO``'s ``xres`` x ``yres`` at ``xoffset``/``yoffset``,
``FBIOGET_FSCREENINFO``'s ``line_length`` as the stride; see ``fb_ioctl``): a
double-buffering driver's ``virtual_size`` is twice the visible height. Only
where the device answers no fb ioctl (a plain file in tests) is sysfs read
(``/sys/class/graphics/fb0/``: ``virtual_size``, ``bits_per_pixel``,
``stride``). Each frame is letterboxed to the screen and converted from BGR
to RGB565 (little-endian, red in the top five bits) or XRGB8888 (bytes B, G,
R, X in memory), then copied into the mapped memory line by line. ``stop()``
blanks the screen.

Mirroring is done at capture (see ``mirrored_source``) so the AI label and
prompts drawn later read the right way round; ``flip`` here is for a screen
behind a half-silvered mirror glass, where the whole picture must flip.

The framebuffer can be replaced under the sink: on a Raspberry Pi, ``/dev/fb0``
is first the firmware's ``simplefb`` (sysfs ``name`` "simple"), until vc4's DRM
driver loads and takes over ("fb0: switching to vc4 from simple" in the kernel
log): the simplefb device is unregistered, a new fb0 ("vc4drmfb") appears, and
the firmware may free the old buffer. An fd opened on the old device then gets
ENODEV from every ioctl (the kernel's ``file_fb_info`` no longer matches), while
writes into its mapping fail silently. So before each frame (``recheck_s``) the sink
checks that its fb is still the one it mapped (the device node's inode and
rdev, the sysfs ``name``, the visible geometry the old fd still answers) and,
when it is not, drops the old mapping without touching it and opens the device
again, reading the new visible size; a device not there (yet) is an
``OutputError`` from ``write()``, and the next write tries again.
"""

from __future__ import annotations

import logging
import mmap
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from appliance.errors import OutputError
from appliance.media.fb_ioctl import Ioctl, read_screen_info
from appliance.media.frames import Frame, Image
from appliance.media.letterbox import letterbox
from appliance.media.sink_base import FrameSink

logger = logging.getLogger(__name__)

SYSFS_GRAPHICS = Path("/sys/class/graphics")
SUPPORTED_BPP = (16, 32)
# How often a running sink checks that its framebuffer is still the one it mapped: every
# frame (about 50 us here: a stat, the sysfs name, two ioctls), because the firmware may
# free a replaced simplefb's buffer and a write into the old mapping would not fail.
RECHECK_S = 0.0


@dataclass(frozen=True)
class FramebufferGeometry:
    """The visible area of one framebuffer: size, depth, stride, and where it starts."""

    width: int
    height: int
    bits_per_pixel: int
    stride: int
    x_offset: int = 0
    y_offset: int = 0
    source: str = "sysfs"

    @property
    def bytes_per_pixel(self) -> int:
        return self.bits_per_pixel // 8

    @property
    def map_bytes(self) -> int:
        """Bytes mapped: every line down to the visible area's last."""
        return self.stride * (self.y_offset + self.height)


def _read_sysfs(sysfs_dir: Path, name: str) -> str:
    try:
        return (sysfs_dir / name).read_text().strip()
    except OSError as exc:
        raise OutputError(f"framebuffer {sysfs_dir / name} cannot be read: {exc}") from exc


def _checked(geometry: FramebufferGeometry, where: object) -> FramebufferGeometry:
    bpp, width, height = geometry.bits_per_pixel, geometry.width, geometry.height
    if bpp not in SUPPORTED_BPP:
        raise OutputError(
            f"framebuffer {where} has {bpp} bits per pixel; only 16 and 32 are supported "
            "(set another depth with fbset, or use the sdl display)"
        )
    row_bytes = (geometry.x_offset + width) * bpp // 8
    if width <= 0 or height <= 0 or geometry.stride < row_bytes:
        raise OutputError(
            f"framebuffer {where}: bad geometry {width}x{height}"
            f"+{geometry.x_offset}+{geometry.y_offset} stride {geometry.stride}"
        )
    return geometry


def read_geometry(sysfs_dir: Path) -> FramebufferGeometry:
    """The framebuffer's size, depth and stride from its sysfs directory (the fallback)."""
    size_text = _read_sysfs(sysfs_dir, "virtual_size")
    try:
        width, height = (int(part) for part in size_text.split(","))
        bpp = int(_read_sysfs(sysfs_dir, "bits_per_pixel"))
        stride = int(_read_sysfs(sysfs_dir, "stride"))
    except ValueError as exc:
        raise OutputError(f"framebuffer {sysfs_dir} has unreadable geometry: {exc}") from exc
    return _checked(FramebufferGeometry(width, height, bpp, stride), sysfs_dir)


def device_geometry(
    fd: int, device: Path, sysfs_dir: Path, ioctl: Ioctl | None = None
) -> FramebufferGeometry:
    """The visible geometry of the open ``fd`` from the kernel; sysfs when it has no fb ioctl."""
    info = read_screen_info(fd) if ioctl is None else read_screen_info(fd, ioctl)
    if info is None:
        return read_geometry(sysfs_dir)
    geometry = FramebufferGeometry(
        info.xres,
        info.yres,
        info.bits_per_pixel,
        info.line_length,
        info.xoffset,
        info.yoffset,
        source="FBIOGET_VSCREENINFO",
    )
    return _checked(geometry, device)


@dataclass(frozen=True)
class FramebufferIdentity:
    """Which framebuffer a device path is now: its node (inode, rdev) and the driver's name."""

    inode: tuple[int, int]  # st_dev, st_ino of the device node (a new node when re-created)
    rdev: int
    name: str  # sysfs ``name``: the driver's id ("simple", "vc4drmfb"); "" when unreadable

    def describe(self) -> str:
        return self.name or "unnamed"


def framebuffer_identity(device: Path, sysfs_dir: Path) -> FramebufferIdentity | None:
    """What ``device`` is now, or None when it is gone."""
    try:
        stat = os.stat(device)
    except OSError:
        return None
    try:
        name = (sysfs_dir / "name").read_text().strip()
    except OSError:
        name = ""
    return FramebufferIdentity((stat.st_dev, stat.st_ino), stat.st_rdev, name)


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
    """Shows frames full screen on ``device`` (default ``/dev/fb0``).

    ``recheck_s``: how often ``write()`` checks that the framebuffer was not
    replaced (0: every frame); ``clock`` is injectable for tests.
    """

    def __init__(
        self,
        device: str | Path = "/dev/fb0",
        *,
        sysfs_dir: Path | None = None,
        flip: bool = False,
        ioctl: Ioctl | None = None,
        recheck_s: float = RECHECK_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.device = Path(device)
        self.sysfs_dir = sysfs_dir if sysfs_dir is not None else SYSFS_GRAPHICS / self.device.name
        self.flip = flip
        self.recheck_s = recheck_s
        self.reopens = 0  # times the device was opened again after it was replaced
        self._ioctl = ioctl  # None: the kernel's (fcntl.ioctl); tests simulate one
        self._clock = clock
        self.geometry: FramebufferGeometry | None = None
        self.identity: FramebufferIdentity | None = None
        self._fd: int | None = None
        self._map: mmap.mmap | None = None
        self._lines: Image | None = None  # the visible area: height x (width x bytes per pixel)
        self._checked_at = 0.0  # when the device was last checked (or opened)

    def __repr__(self) -> str:
        return f"FramebufferSink({str(self.device)!r})"

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the screen; known after ``start()``."""
        if self.geometry is None:
            raise RuntimeError(f"{self!r}: the size is known after start()")
        return self.geometry.width, self.geometry.height

    def _on_start(self) -> None:
        self._open()

    def _open(self) -> None:
        """Open and map the device as it is now; ``OutputError`` when that cannot be done."""
        try:
            fd = os.open(self.device, os.O_RDWR)
        except OSError as exc:
            raise OutputError(
                f"framebuffer {self.device} cannot be opened: {exc.strerror} "
                "(is the user in the video group?)"
            ) from exc
        try:
            identity = framebuffer_identity(self.device, self.sysfs_dir)
            geometry = device_geometry(fd, self.device, self.sysfs_dir, self._ioctl)
            mapped = mmap.mmap(fd, geometry.map_bytes, mmap.MAP_SHARED, mmap.PROT_WRITE)
        except (OSError, ValueError) as exc:
            os.close(fd)
            if isinstance(exc, OutputError):
                raise
            raise OutputError(f"framebuffer {self.device} cannot be mapped: {exc}") from exc
        self._fd, self._map, self.geometry, self.identity = fd, mapped, geometry, identity
        lines = np.frombuffer(mapped, np.uint8).reshape(-1, geometry.stride)
        first = geometry.x_offset * geometry.bytes_per_pixel
        row_bytes = geometry.width * geometry.bytes_per_pixel
        self._lines = lines[geometry.y_offset :, first : first + row_bytes]
        self._checked_at = self._clock()
        logger.info(
            "framebuffer %s (%s): %sx%s visible at +%s+%s, %s bpp, stride %s (from %s)",
            self.device,
            identity.describe() if identity is not None else "unnamed",
            geometry.width,
            geometry.height,
            geometry.x_offset,
            geometry.y_offset,
            geometry.bits_per_pixel,
            geometry.stride,
            geometry.source,
        )

    def _write(self, frame: Frame) -> None:
        if self._map is None:  # replaced, and not back yet when last tried
            self._open()
        elif self._clock() - self._checked_at >= self.recheck_s:
            self._checked_at = self._clock()
            why = self.replaced()
            if why:
                logger.warning("framebuffer %s %s: opening it again", self.device, why)
                self._release(blank=False)  # the old buffer may be another's memory now
                self.reopens += 1
                self._open()
        self.show(frame.image)

    def replaced(self) -> str:
        """Why the mapped framebuffer is no longer the device's ("" while it still is)."""
        geometry, fd = self.geometry, self._fd
        if geometry is None or fd is None:
            return ""
        now = framebuffer_identity(self.device, self.sysfs_dir)
        if now is None:
            return "is gone"
        if self.identity is not None and now != self.identity:
            return f"was replaced ({self.identity.describe()} -> {now.describe()})"
        return self._geometry_changed(fd, geometry)

    def _geometry_changed(self, fd: int, geometry: FramebufferGeometry) -> str:
        """How the open fd's visible geometry differs from the mapped one ("" if it does not)."""
        try:
            current = device_geometry(fd, self.device, self.sysfs_dir, self._ioctl)
        except OutputError as exc:
            return f"cannot be read any more ({exc})"
        if geometry.source != current.source:  # the old fd no longer answers the fb ioctls
            return "no longer answers (ENODEV: unregistered)"
        if current != geometry:
            return (
                f"changed to {current.width}x{current.height} at {current.bits_per_pixel} bpp "
                f"(was {geometry.width}x{geometry.height} at {geometry.bits_per_pixel} bpp)"
            )
        return ""

    def show(self, image: Image) -> None:
        """Letterbox a BGR image to the screen and copy it in (no frame count)."""
        geometry, lines = self.geometry, self._lines
        if geometry is None or lines is None:
            raise RuntimeError(f"cannot show: {self!r} is not started")
        screen = letterbox(image, (geometry.width, geometry.height))
        if self.flip:
            screen = np.ascontiguousarray(screen[:, ::-1])
        if geometry.bits_per_pixel == 16:
            pixels = bgr_to_rgb565(screen).view(np.uint8)
        else:
            pixels = bgr_to_xrgb8888(screen)
        lines[:] = pixels.reshape(lines.shape)

    def _on_stop(self) -> None:
        # a blank screen, not the last frame frozen; but never into a buffer no longer ours
        self._release(blank=self._map is not None and not self.replaced())

    def _release(self, *, blank: bool) -> None:
        lines, mapped, fd = self._lines, self._map, self._fd
        self._lines, self._map, self._fd = None, None, None
        del lines  # the view must go before the mapping can close
        if mapped is not None:
            if blank:
                mapped[:] = bytes(len(mapped))
            mapped.close()
        if fd is not None:
            os.close(fd)
