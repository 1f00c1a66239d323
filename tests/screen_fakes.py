"""A faked screen device tree for tests: ``ROOT/dev/fb0`` and ``ROOT/sys/class/graphics/fb0``;
and ``Recorder``, a sink that keeps what it is shown.

The device is a regular file, so it answers no framebuffer ioctl (ENOTTY) and
the sink reads its geometry from the faked sysfs, as on a driver without the
ioctls; ``name`` is the driver's id, as the kernel's sysfs shows it ("simple"
for the firmware's simplefb, "vc4drmfb" once vc4's DRM driver took over).
``MIRROR_DISPLAY_ROOT=ROOT`` makes `mirror run` use it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from appliance.media.frames import Frame
from appliance.media.sink_base import FrameSink

FILL = 0xAA  # what a new framebuffer holds before anything is drawn


class Recorder(FrameSink):
    """A sink that keeps a copy of every image it is handed (a screen seen from outside)."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[np.ndarray] = []

    def _write(self, frame: Frame) -> None:
        self.images.append(frame.image.copy())


def fb_paths(root: Path, name: str = "fb0") -> tuple[Path, Path]:
    """The device node and the sysfs directory of framebuffer ``name`` under ``root``."""
    return root / "dev" / name, root / "sys" / "class" / "graphics" / name


def plug_fb(
    root: Path,
    driver: str,
    size: tuple[int, int],
    bpp: int = 32,
    *,
    padding: int = 0,
    name: str = "fb0",
) -> tuple[Path, Path]:
    """Register framebuffer ``name`` under ``root``: sysfs first, then the node, which
    replaces any old node atomically (a new inode, as devtmpfs makes a new node)."""
    device, sysfs = fb_paths(root, name)
    sysfs.mkdir(parents=True, exist_ok=True)
    width, height = size
    stride = width * bpp // 8 + padding
    (sysfs / "name").write_text(f"{driver}\n")
    (sysfs / "virtual_size").write_text(f"{width},{height}\n")
    (sysfs / "bits_per_pixel").write_text(f"{bpp}\n")
    (sysfs / "stride").write_text(f"{stride}\n")
    device.parent.mkdir(parents=True, exist_ok=True)
    fresh = device.with_name(f".{name}.new")
    fresh.write_bytes(bytes([FILL]) * (stride * height))
    os.replace(fresh, device)
    return device, sysfs


def unplug_fb(root: Path, keep_buffer: Path | None = None, name: str = "fb0") -> None:
    """Unregister it: the node and the sysfs directory go (``keep_buffer``: move the old
    buffer there instead of deleting it, to check that nothing writes into it any more)."""
    device, sysfs = fb_paths(root, name)
    if keep_buffer is not None:
        device.rename(keep_buffer)
    else:
        device.unlink()
    for entry in sysfs.iterdir():
        entry.unlink()
    sysfs.rmdir()


def stride_of(sysfs: Path) -> int:
    return int((sysfs / "stride").read_text())


def pixel32(data: bytes, stride: int, x: int, y: int) -> tuple[int, ...]:
    offset = y * stride + x * 4
    return tuple(data[offset : offset + 4])


def pixel16(data: bytes, stride: int, x: int, y: int) -> int:
    offset = y * stride + x * 2
    return int.from_bytes(data[offset : offset + 2], "little")
