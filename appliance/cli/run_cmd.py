"""``mirror run``: the live mirror, source -> threaded pipeline -> outputs, until stopped.

Runs until the source ends, ``--frames`` frames were captured, Ctrl-C or
SIGTERM; SIGHUP reloads the settings file and keeps running (see
``appliance.settings_reload``). A settings file that cannot be used starts it
in safe mode (``appliance.cli.safe_mode``), not an exit 1. Every stop closes the outputs, so a
``--output`` recording is always finished and playable; it is written in
segments (``appliance.media.recording_sink``), so even ``kill -9`` loses only
its last seconds, and a recording that fails (a full disk) stops the run and
exits 1 with what was recorded kept. Options are checked (a frame rate above 0
and at most 240, a writable output) before any model is loaded. It prints a status
line every ``--status-every`` seconds and a summary at the end, both from the
pipeline's telemetry.

At start it probes the device (or takes ``--profile NAME``), makes the runtime
choice and prints it as one short block on stderr (stdout starts with the
preview address). The profile's target rate is used unless the config file
sets ``pipeline.target_fps``. Each fallback is logged once, by ``record_fallback``.

Under systemd (``Type=notify``, ``WatchdogSec=``) the session's ``tick`` tells
it READY once the first frame is shown and sends the watchdog heartbeat while
frames flow; SIGTERM finishes the frame, releases the camera, closes the
outputs and exits 0 within 3 s (see ``MirrorSession.stop``).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from appliance.cli.common import add_config_argument, check_fps, check_seconds
from appliance.cli.run_io import open_run_display, open_run_source
from appliance.cli.run_report import status_line, summary_line
from appliance.cli.safe_mode import RunSettings, load_run_settings
from appliance.cli.web_start import start_admin_ui
from appliance.config import Settings
from appliance.device.catalog import load_profiles
from appliance.errors import BackendFallbackWarning, ConfigError
from appliance.fileio import atomic_write_text, refuse_same_file
from appliance.inference.engine_builds import engines_to_build
from appliance.inference.runtime import (
    RuntimeChoice,
    choose_for_device,
    config_target_fps,
    with_target_fps,
)
from appliance.media.null_sink import NullSink
from appliance.media.overlays import Overlays
from appliance.media.preparing_screen import PreparingScreen
from appliance.media.preview_server import PreviewServer
from appliance.media.preview_sink import WebPreviewSink
from appliance.media.recording_sink import RecordingSink
from appliance.media.sink_base import FrameSink
from appliance.media.sizes import parse_size
from appliance.media.video_sink import check_writable
from appliance.modelstore import ModelStore
from appliance.paths import data_dir, web_dir
from appliance.session import MirrorSession, SessionOptions
from appliance.settings_reload import reload_settings
from web_ui.auth_store import FIRST_BOOT_NAME, first_boot_notice

logger = logging.getLogger(__name__)

POLL_S = 0.2  # how often the main thread checks whether the run ended
MAX_PORT = 65535


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("run", help="run the mirror: source -> swap -> outputs")
    parser.add_argument(
        "--source",
        default="demo",
        help="demo (default), a video file, a camera index or /dev/videoN, or camera "
        "(the profile's camera)",
    )
    parser.add_argument(
        "--identity",
        default="grace_hopper",
        help="identity photo: a file or an asset name (default grace_hopper)",
    )
    parser.add_argument("--size", default="640x480", help="demo/camera size WxH (640x480)")
    parser.add_argument("--fps", type=float, default=30.0, help="demo/camera frame rate")
    parser.add_argument("--frames", type=int, default=None, help="stop after N frames")
    parser.add_argument("--output", type=Path, default=None, help="also record to this .mp4")
    parser.add_argument("--host", default="127.0.0.1", help="preview address (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="preview port (8080; 0 = any)")
    parser.add_argument("--no-preview", action="store_true", help="do not serve the preview")
    parser.add_argument("--loop", action="store_true", help="loop a video file source")
    parser.add_argument(
        "--as-camera",
        action="store_true",
        help="treat a video file (or the demo) as the live camera in front of the mirror: "
        "liveness on, as for a visitor",
    )
    parser.add_argument(
        "--status-every",
        type=float,
        default=10.0,
        help="print a status line every N seconds (10; 0 = never)",
    )
    parser.add_argument(
        "--profile",
        default=None,
        help="hardware profile to use (default: the one the probe matches; see `mirror doctor`)",
    )
    parser.add_argument(
        "--no-web", action="store_true", help="do not serve the admin page (see web.yaml)"
    )
    parser.add_argument(
        "--display",
        choices=("none", "auto"),
        default="none",
        help="none (default): no screen; auto: the profile's HDMI screen (framebuffer or SDL)",
    )
    add_config_argument(parser)
    parser.set_defaults(handler=_run)


def _sinks(
    args: argparse.Namespace, feed: WebPreviewSink | None, recorder: RecordingSink | None
) -> list[FrameSink]:
    sinks: list[FrameSink] = []
    if feed is not None:
        sinks.append(PreviewServer(args.host, args.port, hub=feed.hub))
    if recorder is not None:
        sinks.append(recorder)
    return sinks or [NullSink()]


def _recorder(args: argparse.Namespace, fps: float, stop: threading.Event) -> RecordingSink | None:
    """The ``--output`` recording; one that fails (a full disk) stops the run."""
    if args.output is None:
        return None
    return RecordingSink(args.output, fps=fps, on_failure=lambda why: stop.set())


def _check(args: argparse.Namespace) -> None:
    """The options, before any model is loaded: each bad one is a ``ConfigError``."""
    check_fps(args.fps)
    if args.frames is not None and args.frames < 1:
        raise ConfigError(f"--frames must be at least 1, got {args.frames}")
    check_seconds(args.status_every, "--status-every")
    parse_size(args.size)
    if not 0 <= args.port <= MAX_PORT:
        raise ConfigError(f"--port must be 0..{MAX_PORT}, got {args.port}")
    if args.output is not None:  # a recording over its own source would destroy it at the stop
        refuse_same_file(args.output, Path(args.source))
        check_writable(args.output)


@contextmanager
def _handle_signals(stop: threading.Event, reload: threading.Event) -> Iterator[None]:
    """SIGTERM (systemd, docker stop) sets ``stop`` and SIGHUP (systemd's ExecReload, a
    closed terminal) sets ``reload``, instead of killing the process; SIGINT stays Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, lambda signum, frame: stop.set()),
        signal.SIGHUP: signal.signal(signal.SIGHUP, lambda signum, frame: reload.set()),
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _choose(args: argparse.Namespace, store: ModelStore, settings: Settings) -> RuntimeChoice:
    """Make the runtime choice and print it as one block."""
    choice = choose_for_device(store, override=args.profile)
    for line in choice.describe(config_target_fps(settings)):
        print(f"mirror: {line}", file=sys.stderr, flush=True)
    return choice


def _preparing(
    choice: RuntimeChoice,
    display: FrameSink | None,
    overlays: Overlays | None,
    size: tuple[int, int],
) -> AbstractContextManager[object]:
    """The "preparing" screen while TensorRT builds engines at the first start (said on
    stderr too); nothing to show when every engine is cached or there is no screen."""
    pending = engines_to_build(choice.roles)
    if not pending:
        return nullcontext()
    print(
        f"mirror: building TensorRT engines for {', '.join(pending)} (first start: minutes, "
        "then cached)",
        file=sys.stderr,
        flush=True,
    )
    if display is None or overlays is None:
        return nullcontext()
    return PreparingScreen(display, overlays, size)


def _run(args: argparse.Namespace) -> int:
    with warnings.catch_warnings():
        # record_fallback logs each fallback once; its warning would say it twice.
        warnings.simplefilter("ignore", BackendFallbackWarning)
        return _run_mirror(args)


def _run_mirror(args: argparse.Namespace) -> int:
    _check(args)
    loaded = _load_settings(args)
    settings = loaded.settings
    store = ModelStore()
    choice = _choose(args, store, settings)
    settings = with_target_fps(settings, choice)
    profile = load_profiles()[choice.profile]
    opened = open_run_source(args, profile)
    source = opened.source
    if args.loop and hasattr(source, "loop"):
        source.loop = True
    display, overlays = open_run_display(args, profile, store)
    feed = None if args.no_preview else WebPreviewSink()  # both previews read it
    stop, reload = threading.Event(), threading.Event()
    recorder = _recorder(args, source.fps, stop)
    options = SessionOptions(
        identity=args.identity,
        frame_limit=args.frames,
        web=None if args.no_web else start_admin_ui,
        settings_path=loaded.save_to,
        safe_mode=loaded.safe_mode,
        announce=_announce_password,
        extra_sinks=_sinks(args, feed, recorder),
        preview=feed,
        mode=opened.mode,
        display=display,
        overlays=overlays,
    )
    with _preparing(choice, display, overlays, source.size):
        session = MirrorSession(settings, store, choice, source, options)  # loads the models
    if not session.live:
        print("mirror: liveness off: the source is not a live camera", file=sys.stderr)
    elif args.as_camera:
        print(f"mirror: liveness on: {args.source} plays the camera (--as-camera)", file=sys.stderr)
    with _handle_signals(stop, reload):
        try:
            session.start()
            for sink in options.extra_sinks:
                if isinstance(sink, PreviewServer):
                    print(f"mirror: preview at {sink.url}  (Ctrl-C to stop)", flush=True)
            if session.web_url:
                print(f"mirror: admin page at {session.web_url}", flush=True)
            _watch(session, stop, args.status_every, reload, _config_path(args))
        except KeyboardInterrupt:
            print("mirror: stopping", flush=True)
        finally:
            session.stop()
    runner = session.runner
    print(summary_line(runner.snapshot(), runner.end_reason or "stopped"), flush=True)
    if recorder is not None:
        recorder.finish()  # joins the segments; raises (exit 1) when the recording failed
    return 0


def _config_path(args: argparse.Namespace) -> Path:
    path: Path = args.config or data_dir() / "config.yaml"
    return path


def _load_settings(args: argparse.Namespace) -> RunSettings:
    """The settings file, or safe mode (said in one line) when it cannot be used."""
    loaded = load_run_settings(_config_path(args), required=args.config is not None)
    if loaded.safe_mode:
        print(f"mirror: warning: safe mode: {loaded.safe_mode}", file=sys.stderr, flush=True)
    return loaded


def _announce_password(password: str) -> None:
    """The admin page's first-start password, once, on the console, and on the display until
    the first login (the same notice provisioning leaves; the first password change removes it).
    """
    print(
        f"mirror: admin password (first start; you must change it at first login): {password}",
        file=sys.stderr,
        flush=True,
    )
    atomic_write_text(web_dir() / FIRST_BOOT_NAME, first_boot_notice(password), mode=0o600)


def _watch(
    session: MirrorSession,
    stop: threading.Event,
    every_s: float,
    reload: threading.Event | None = None,
    settings_path: Path | None = None,
) -> None:
    """Wait for the run to end or ``stop``, printing a status line every ``every_s``;
    ``reload`` set (SIGHUP) reloads the settings from ``settings_path``."""
    runner = session.runner
    next_status = time.monotonic() + every_s
    while runner.running and not stop.wait(POLL_S):
        if reload is not None and settings_path is not None and reload.is_set():
            reload.clear()
            print(f"mirror: {reload_settings(session, settings_path)}", file=sys.stderr, flush=True)
        session.tick()
        if every_s > 0 and time.monotonic() >= next_status:
            print(status_line(runner.snapshot()), flush=True)
            next_status += every_s
