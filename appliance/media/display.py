"""Pick the screen sink the hardware profile asks for, or none (headless).

``open_display`` never fails on a missing screen: it logs one warning and
returns None, and the mirror runs headless with the preview and admin pages.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

from appliance.device.profile import DisplaySpec
from appliance.media.framebuffer_sink import SYSFS_GRAPHICS, FramebufferSink
from appliance.media.sdl_sink import SdlSink
from appliance.media.sink_base import FrameSink

logger = logging.getLogger(__name__)


def open_display(
    spec: DisplaySpec, *, sysfs_root: Path = SYSFS_GRAPHICS, device: str | None = None
) -> FrameSink | None:
    """A (not yet started) sink for ``spec``, or None when there is no screen to use.

    ``device`` overrides ``spec.device`` (tests point it at a plain file);
    ``sysfs_root`` is where ``<fbN>/virtual_size`` and friends are read when the
    device answers no framebuffer ioctl (a plain file). A Jetson on L4T 35.4 or
    later has no ``/dev/fb0``: its profiles ask for ``sdl`` (KMS) instead.
    """
    if spec.kind == "none" or spec.connector == "headless":
        logger.info("no display configured: preview and admin pages only")
        return None
    if spec.kind == "sdl":
        if importlib.util.find_spec("pygame") is None:
            logger.warning(
                "display kind sdl needs pygame (pip install '.[display]'): running headless"
            )
            return None
        return SdlSink(fullscreen=spec.fullscreen, size=spec.size)
    fb = Path(device if device is not None else spec.device)
    sysfs_dir = sysfs_root / fb.name
    if not (fb.is_char_device() or (fb.exists() and (sysfs_dir / "virtual_size").exists())):
        logger.warning("framebuffer %s not found (no screen attached?): running headless", fb)
        return None
    return FramebufferSink(fb, sysfs_dir=sysfs_dir)
