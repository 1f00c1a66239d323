"""A framebuffer's visible geometry from the kernel: ``FBIOGET_VSCREENINFO`` and ``FIXSCREENINFO``.

sysfs ``virtual_size`` is the virtual resolution, which a double-buffering
driver reports as twice the visible height; the visible one is ``xres`` x
``yres`` of ``struct fb_var_screeninfo`` (linux/fb.h), shown from
(``xoffset``, ``yoffset``) of the virtual area, and the stride is ``line_length``
of ``struct fb_fix_screeninfo``. The ioctl call is injectable (``fcntl.ioctl``
by default) so a test can play a kernel; on a regular file it fails with
ENOTTY and ``read_screen_info`` returns None (the caller falls back to sysfs).
"""

from __future__ import annotations

import fcntl
import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

FBIOGET_VSCREENINFO = 0x4600
FBIOGET_FSCREENINFO = 0x4602

# struct fb_var_screeninfo: 40 __u32 (xres, yres, xres_virtual, yres_virtual, xoffset,
# yoffset, bits_per_pixel, grayscale, 4 fb_bitfields of 3, then timings and reserved[4]).
VAR_SCREENINFO = struct.Struct("=40I")
# struct fb_fix_screeninfo in native layout: id[16], unsigned long smem_start, smem_len,
# type, type_aux, visual, xpanstep, ypanstep, ywrapstep, line_length, unsigned long
# mmio_start, mmio_len, accel, capabilities, reserved[2]. Native alignment puts
# line_length at 48 on 64-bit and 44 on 32-bit ARM, as the kernel does.
FIX_SCREENINFO = struct.Struct("@16sL4I3HIL2IH2H")
_FIX_BUFFER_BYTES = 128  # more than sizeof(struct fb_fix_screeninfo) (80 on 64-bit)

Ioctl = Callable[[int, int, bytearray], Any]


@dataclass(frozen=True)
class ScreenInfo:
    """What the kernel says: the visible area inside the virtual one, depth and stride."""

    xres: int
    yres: int
    xres_virtual: int
    yres_virtual: int
    xoffset: int
    yoffset: int
    bits_per_pixel: int
    line_length: int


def _kernel_ioctl(fd: int, request: int, buffer: bytearray) -> Any:
    return fcntl.ioctl(fd, request, buffer, True)


def read_screen_info(fd: int, ioctl: Ioctl = _kernel_ioctl) -> ScreenInfo | None:
    """The open framebuffer ``fd``'s screen info, or None when it answers no fb ioctl."""
    var = bytearray(VAR_SCREENINFO.size)
    fix = bytearray(max(FIX_SCREENINFO.size, _FIX_BUFFER_BYTES))
    try:
        ioctl(fd, FBIOGET_VSCREENINFO, var)
        ioctl(fd, FBIOGET_FSCREENINFO, fix)
    except OSError as exc:  # ENOTTY on a regular file, EINVAL on another device
        logger.debug("framebuffer ioctl not available on fd %s: %s", fd, exc)
        return None
    xres, yres, xvirt, yvirt, xoff, yoff, bpp = VAR_SCREENINFO.unpack_from(var)[:7]
    line_length = FIX_SCREENINFO.unpack_from(fix)[9]
    return ScreenInfo(xres, yres, xvirt, yvirt, xoff, yoff, bpp, line_length)
