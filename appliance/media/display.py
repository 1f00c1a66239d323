"""Pick the screen sink the hardware profile asks for, or none (headless).

``open_display`` gives None when the profile has no screen (``kind: none`` or
``connector: headless``): nothing is missing then. Otherwise it gives a
``ScreenGuard`` around ``screen_sink``: a screen that is missing or cannot
start (no ``/dev/fb0``, no permission, KMSDRM without DRM master, no pygame)
never stops the mirror; it is reported, and tried again until it shows.

``$MIRROR_DISPLAY_ROOT`` names another root for the framebuffer device and
its sysfs directory (``ROOT/dev/fb0``, ``ROOT/sys/class/graphics/fb0``): a
faked device tree for tests, as the hardware probe takes a root.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path

from appliance.device.profile import DisplaySpec
from appliance.errors import MissingExtraError, OutputError
from appliance.media.framebuffer_sink import SYSFS_GRAPHICS, FramebufferSink
from appliance.media.screen_guard import ScreenGuard
from appliance.media.sdl_sink import SdlSink
from appliance.media.sink_base import FrameSink

logger = logging.getLogger(__name__)

ROOT_ENV = "MIRROR_DISPLAY_ROOT"


def display_root() -> Path:
    """``$MIRROR_DISPLAY_ROOT`` or ``/``."""
    return Path(os.environ.get(ROOT_ENV) or "/")


def screen_sink(
    spec: DisplaySpec, *, sysfs_root: Path | None = None, device: str | Path | None = None
) -> FrameSink:
    """A (not yet started) sink for ``spec``'s screen as it is now; ``OutputError`` when
    there is no framebuffer, ``MissingExtraError`` when SDL is asked and pygame is absent.

    ``device`` overrides ``spec.device`` (tests point it at a plain file);
    ``sysfs_root`` is where ``<fbN>/virtual_size`` and friends are read when the
    device answers no framebuffer ioctl (a plain file). A Jetson on L4T 35.4 or
    later has no ``/dev/fb0``: its profiles ask for ``sdl`` (KMS) instead.
    """
    if spec.kind == "sdl":
        if importlib.util.find_spec("pygame") is None:
            raise MissingExtraError(
                "display kind sdl needs pygame (pip install '.[display]'; pygame-ce on aarch64)"
            )
        return SdlSink(fullscreen=spec.fullscreen, size=spec.size)
    root = display_root()
    fb = Path(device) if device is not None else root / spec.device.lstrip("/")
    sysfs_dir = (sysfs_root or root / SYSFS_GRAPHICS.relative_to("/")) / fb.name
    if not (fb.is_char_device() or (fb.exists() and (sysfs_dir / "virtual_size").exists())):
        raise OutputError(f"framebuffer {fb} not found (no screen attached?)")
    return FramebufferSink(fb, sysfs_dir=sysfs_dir)


def open_display(
    spec: DisplaySpec, *, sysfs_root: Path | None = None, device: str | Path | None = None
) -> ScreenGuard | None:
    """The screen ``spec`` asks for, guarded (see ``ScreenGuard``); None when it asks none."""
    if spec.kind == "none" or spec.connector == "headless":
        logger.info("no display configured: preview and admin pages only")
        return None
    what = "SDL display" if spec.kind == "sdl" else f"framebuffer {device or spec.device}"
    return ScreenGuard(lambda: screen_sink(spec, sysfs_root=sysfs_root, device=device), what)
