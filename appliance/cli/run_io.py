"""What `mirror run` reads from and shows on: the source (camera, file, demo) and the screen."""

from __future__ import annotations

import argparse

from appliance.device.profile import HardwareProfile
from appliance.media.display import open_display
from appliance.media.display_screens import FirstBootScreen
from appliance.media.mirror_source import OpenedSource, open_mirror_source
from appliance.media.overlays import Overlays
from appliance.media.sink_base import FrameSink
from appliance.media.sizes import parse_size
from appliance.media.venue_problem import read_venue_problem
from appliance.modelstore import ModelStore
from appliance.paths import web_dir
from web_ui.auth_store import FIRST_BOOT_NAME
from web_ui.config import load_web_config


def open_run_source(args: argparse.Namespace, profile: HardwareProfile) -> OpenedSource:
    """The source and its mode (see ``open_mirror_source``: a camera is waited for and
    flipped into a mirror image when the profile's display says so); a file that cannot
    be opened still fails the run."""
    return open_mirror_source(
        args.source,
        profile.capture,
        mirror=profile.display.mirror,
        size=parse_size(args.size),
        fps=args.fps,
        frames=args.frames,
        as_camera=bool(getattr(args, "as_camera", False)),
    )


def open_run_display(
    args: argparse.Namespace, profile: HardwareProfile, store: ModelStore
) -> tuple[FrameSink | None, Overlays | None]:
    """The HDMI screen when asked for (``--display auto``), showing the first-boot notice
    until the first admin login (and under it and the camera screen, the image's venue-file
    problem when the first boot found one); None without one."""
    if args.display == "none":
        return None, None
    screen = open_display(profile.display)
    if screen is None:
        return None, None
    overlays = Overlays(store.path("label_font"), problem=read_venue_problem())
    notice = web_dir() / FIRST_BOOT_NAME
    web = load_web_config()
    return FirstBootScreen(screen, overlays, notice, web.port, https=web.tls), overlays
