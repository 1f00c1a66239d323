"""``mirror run``: the live loop from a source to the outputs."""

from __future__ import annotations

import argparse
import logging
import re
import time
from pathlib import Path

from appliance.cli.common import add_config_argument, load_cli_settings
from appliance.errors import ConfigError
from appliance.media.null_sink import NullSink
from appliance.media.preview_server import PreviewServer
from appliance.media.sink_base import FrameSink
from appliance.media.sources import open_source
from appliance.media.video_sink import VideoFileSink
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_processor

logger = logging.getLogger(__name__)


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
    add_config_argument(parser)
    parser.set_defaults(handler=_run)


def _sinks(args: argparse.Namespace, fps: float) -> list[FrameSink]:
    sinks: list[FrameSink] = []
    if not args.no_preview:
        sinks.append(PreviewServer(args.host, args.port))
    if args.output is not None:
        sinks.append(VideoFileSink(args.output, fps=fps))
    return sinks or [NullSink()]


def _run(args: argparse.Namespace) -> int:
    if args.frames is not None and args.frames < 1:
        raise ConfigError(f"--frames must be at least 1, got {args.frames}")
    settings = load_cli_settings(args)
    store = ModelStore()
    source = open_source(args.source, size=parse_size(args.size), fps=args.fps, frames=args.frames)
    if args.loop and hasattr(source, "loop"):
        source.loop = True
    processor = build_processor(settings, store, args.identity)
    sinks = _sinks(args, source.fps)
    started: list[FrameSink] = []
    count = swapped = 0
    t0 = time.monotonic()
    try:
        for sink in sinks:
            sink.start()
            started.append(sink)
            if isinstance(sink, PreviewServer):
                print(f"mirror: preview at {sink.url}  (Ctrl-C to stop)", flush=True)
        with source:
            for frame in source:
                processor.process(frame)
                for sink in started:
                    sink.write(frame)
                count += 1
                swapped += int(frame.swapped)
                if args.frames is not None and count >= args.frames:
                    break
    finally:
        for sink in started:
            sink.close()
    elapsed = max(time.monotonic() - t0, 1e-6)
    print(
        f"mirror: {count} frames ({swapped} swapped) in {elapsed:.1f} s, {count / elapsed:.1f} fps"
    )
    return 0
