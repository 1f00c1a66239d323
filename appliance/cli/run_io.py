"""What `mirror run` reads from and shows on: the source (camera, file, demo) and the screen."""

from __future__ import annotations

import argparse

from appliance.device.profile import HardwareProfile
from appliance.media.awaited_source import AwaitedSource
from appliance.media.camera_open import open_camera
from appliance.media.camera_source import CameraSource
from appliance.media.display import open_display
from appliance.media.display_screens import FirstBootScreen
from appliance.media.mirrored_source import MirroredSource
from appliance.media.overlays import Overlays
from appliance.media.sink_base import FrameSink
from appliance.media.sizes import parse_size
from appliance.media.source_base import FrameSource
from appliance.media.sources import open_source
from appliance.modelstore import ModelStore
from appliance.paths import web_dir
from web_ui.auth_store import FIRST_BOOT_NAME
from web_ui.config import load_web_config


def open_run_source(args: argparse.Namespace, profile: HardwareProfile) -> tuple[FrameSource, bool]:
    """The source, and whether it is a live camera (a camera is flipped into a mirror image
    when the profile's display says so, before anything is drawn on it). A camera that is
    missing at start is waited for (see ``AwaitedSource``); a file that cannot be opened
    still fails the run."""
    size = parse_size(args.size)
    mirror = profile.display.mirror
    if args.source == "camera":
        return AwaitedSource(open_camera(profile.capture, mirror=mirror)), True
    source = open_source(args.source, size=size, fps=args.fps, frames=args.frames)
    if isinstance(source, CameraSource):
        return AwaitedSource(MirroredSource(source) if mirror else source), True
    return source, False


def open_run_display(
    args: argparse.Namespace, profile: HardwareProfile, store: ModelStore
) -> tuple[FrameSink | None, Overlays | None]:
    """The HDMI screen when asked for (``--display auto``), showing the first-boot notice
    until the first admin login; None without one."""
    if args.display == "none":
        return None, None
    screen = open_display(profile.display)
    if screen is None:
        return None, None
    overlays = Overlays(store.path("label_font"))
    notice = web_dir() / FIRST_BOOT_NAME
    return FirstBootScreen(screen, overlays, notice, load_web_config().port), overlays
