"""``mirror bench``: per-stage p50/p95, end to end, fps; variants compared in one run."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import logging
from collections.abc import Callable
from pathlib import Path

from appliance.cli.common import add_config_argument, load_cli_settings
from appliance.cli.run_cmd import parse_size
from appliance.config import Settings, updated
from appliance.media.demo_source import DemoSource
from appliance.media.resized_video import ResizedVideoSource
from appliance.media.source_base import FrameSource
from appliance.modelstore import ModelStore
from appliance.paths import REPO_ROOT
from appliance.pipeline.bench import BenchResult, format_table, run_variant
from appliance.pipeline.factory import build_analyzer, build_processor
from appliance.pipeline.frames import Image
from appliance.pipeline.processor import FrameProcessor
from appliance.vision.identity import read_image

logger = logging.getLogger(__name__)

DEFAULT_MEDIA = REPO_ROOT.parent / "shared" / "media"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("bench", help="benchmark the stages and variants")
    parser.add_argument("--frames", type=int, default=150, help="frames per clip and variant")
    parser.add_argument("--sizes", default="640x480,1280x720", help="comma-separated WxH")
    parser.add_argument(
        "--media",
        type=Path,
        default=DEFAULT_MEDIA,
        help="folder of extra .mp4 clips (default ../shared/media when present)",
    )
    parser.add_argument("--identity", default="grace_hopper", help="identity photo")
    parser.add_argument("--json", type=Path, default=None, help="also write results as JSON")
    add_config_argument(parser)
    parser.set_defaults(handler=_bench)


def _variants(settings: Settings) -> list[tuple[str, Settings, int]]:
    """(name, settings, re-detect interval)."""
    poisson = updated(settings, {"swap": {"blend": "poisson"}})
    return [
        ("track+feather", settings, 5),
        ("detect-every+feather", settings, 1),
        ("track+poisson", poisson, 5),
    ]


SourceFactory = Callable[[tuple[int, int]], FrameSource]


def _clips(args: argparse.Namespace, store: ModelStore) -> list[tuple[str, SourceFactory]]:
    demo_image = read_image(store.path("astronaut"))
    clips: list[tuple[str, SourceFactory]] = [("demo", functools.partial(_demo_source, demo_image))]
    if args.media.is_dir():
        for path in sorted(args.media.glob("*.mp4")):
            clips.append((path.name, functools.partial(ResizedVideoSource, path)))
    else:
        print(f"bench: {args.media} absent, demo clip only")
    return clips


def _demo_source(image: Image, size: tuple[int, int]) -> FrameSource:
    return DemoSource(image, size=size, paced=False)


def _bench(args: argparse.Namespace) -> int:
    settings = load_cli_settings(args)
    store = ModelStore()
    analyzer = build_analyzer(settings, store)
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    processors: list[tuple[str, FrameProcessor]] = []
    for name, variant_settings, interval in _variants(settings):
        proc = build_processor(variant_settings, store, args.identity, analyzer=analyzer)
        proc.redetect_every = interval
        processors.append((name, proc))
    results: list[BenchResult] = []
    for clip, make in _clips(args, store):
        for size in sizes:
            for name, proc in processors:
                source = functools.partial(make, size)
                result = run_variant(clip, source, proc, name, args.frames)
                results.append(result)
                print(f"bench: {clip} {size[0]}x{size[1]} {name}: {result.fps:.1f} fps", flush=True)
    print()
    print(format_table(results))
    if args.json is not None:
        args.json.write_text(json.dumps([dataclasses.asdict(r) for r in results], indent=1))
    return 0
