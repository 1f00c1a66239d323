"""``mirror run``: the live mirror, source -> threaded pipeline -> outputs, until stopped.

Runs until the source ends, ``--frames`` frames were captured, Ctrl-C or
SIGTERM; prints a status line every ``--status-every`` seconds and a summary
at the end, both from the pipeline's telemetry.
"""

from __future__ import annotations

import argparse
import logging
import re
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from appliance.cli.common import add_config_argument, load_cli_settings
from appliance.errors import ConfigError
from appliance.media.null_sink import NullSink
from appliance.media.preview_server import PreviewServer
from appliance.media.sink_base import FrameSink
from appliance.media.sources import open_source
from appliance.media.video_sink import VideoFileSink
from appliance.modelstore import ModelStore
from appliance.pipeline.adaptive import AdaptiveController
from appliance.pipeline.factory import build_processor
from appliance.pipeline.runner import PipelineRunner
from appliance.pipeline.snapshot import TelemetrySnapshot
from appliance.pipeline.telemetry import Telemetry

logger = logging.getLogger(__name__)

POLL_S = 0.2  # how often the main thread checks whether the run ended


def parse_size(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d{2,5})x(\d{2,5})", text.strip())
    if not match:
        raise ConfigError(f"size must look like 640x480, got {text!r}")
    return int(match.group(1)), int(match.group(2))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("run", help="run the mirror: source -> swap -> outputs")
    parser.add_argument(
        "--source",
        default="demo",
        help="demo (default), a video file, or a camera index or /dev/videoN",
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
        "--status-every",
        type=float,
        default=10.0,
        help="print a status line every N seconds (10; 0 = never)",
    )
    add_config_argument(parser)
    parser.set_defaults(handler=_run)


def _sinks(args: argparse.Namespace, fps: float) -> list[FrameSink]:
    sinks: list[FrameSink] = []
    if not args.no_preview:
        sinks.append(PreviewServer(args.host, args.port))
    if args.output is not None:
        sinks.append(VideoFileSink(args.output, fps=fps))
    return sinks or [NullSink()]


def _check(args: argparse.Namespace) -> None:
    if args.frames is not None and args.frames < 1:
        raise ConfigError(f"--frames must be at least 1, got {args.frames}")
    if args.status_every < 0:
        raise ConfigError(f"--status-every must be >= 0 s, got {args.status_every}")


@contextmanager
def _stop_on_sigterm(stop: threading.Event) -> Iterator[None]:
    """SIGTERM (systemd, docker stop) sets ``stop`` instead of killing the process."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def status_line(snap: TelemetrySnapshot) -> str:
    return (
        f"mirror: {snap.input_fps:.1f} fps in, {snap.output_fps:.1f} fps out, "
        f"end to end p95 {_ms(snap.e2e_ms.p95)}, {snap.faces} face(s), "
        f"{snap.mode}, {snap.quality}, camera {'ok' if snap.camera.connected else 'lost'}"
    )


def summary_line(snap: TelemetrySnapshot, reason: str) -> str:
    drops = ", ".join(f"{k} {v}" for k, v in sorted(snap.drops.items())) or "none"
    fps = snap.frames_out / snap.uptime_s if snap.uptime_s > 0 else 0.0
    return (
        f"mirror: {snap.frames_in} frames captured, {snap.frames_out} shown "
        f"({snap.swapped} swapped) in {snap.uptime_s:.1f} s, {fps:.1f} fps; "
        f"end to end p50 {_ms(snap.e2e_ms.p50)}, p95 {_ms(snap.e2e_ms.p95)}; "
        f"dropped: {drops}; errors {snap.error_count()}; ended: {reason}"
    )


def _run(args: argparse.Namespace) -> int:
    _check(args)
    settings = load_cli_settings(args)
    store = ModelStore()
    source = open_source(args.source, size=parse_size(args.size), fps=args.fps, frames=args.frames)
    if args.loop and hasattr(source, "loop"):
        source.loop = True
    processor = build_processor(settings, store, args.identity)
    sinks = _sinks(args, source.fps)
    telemetry = Telemetry()
    runner = PipelineRunner(
        source,
        processor,
        sinks,
        telemetry,
        settings.pipeline.latency_budget_ms,
        frame_limit=args.frames,
        controller=AdaptiveController(processor, telemetry, settings.pipeline),
    )
    stop = threading.Event()
    with _stop_on_sigterm(stop):
        runner.start()
        try:
            for sink in sinks:
                if isinstance(sink, PreviewServer):
                    print(f"mirror: preview at {sink.url}  (Ctrl-C to stop)", flush=True)
            _watch(runner, stop, args.status_every)
        except KeyboardInterrupt:
            print("mirror: stopping", flush=True)
        finally:
            runner.stop()
    print(summary_line(runner.snapshot(), runner.end_reason or "stopped"), flush=True)
    return 0


def _watch(runner: PipelineRunner, stop: threading.Event, every_s: float) -> None:
    """Wait for the run to end or ``stop``, printing a status line every ``every_s``."""
    next_status = time.monotonic() + every_s
    while runner.running and not stop.wait(POLL_S):
        if every_s > 0 and time.monotonic() >= next_status:
            print(status_line(runner.snapshot()), flush=True)
            next_status += every_s
