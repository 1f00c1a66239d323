"""``mirror bench``: a naive synchronous loop against the real pipeline, same clips.

Clips: each ``*.mp4`` of ``--media`` (../shared/media by default), or the
demo camera when there is none, at each ``--sizes``, with 1 and/or 3 faces
(``--faces``; 3 faces by tiling; ``group``: 3 small faces, a tiled half-body
shot), played as a live camera at ``--fps``; ``--cores N`` holds the process
to N CPUs; ``--no-restarts`` decodes every camera frame whole. Every case
and variant runs ``--repeat`` times (3), each repeat through all cases
before the next; its row's latencies are over every run's
frames together, its other figures the run with the median e2e p95
(``bench.pooled_run``). Prints a line per run, then a table and the
issue's targets (``bench_targets``) checked on the pipeline rows; ``--json``
also writes every figure, ``--markdown [FILE]`` the table as a Markdown page
(docs/benchmarks.md by default). After the timings, the quality rows: the
1-face swap of each clip measured as ``mirror eval`` does
(``bench_quality``; ``--quality-frames N`` frames each, 0 for none).
``--liveness`` benchmarks the liveness gate instead (``bench_liveness_cmd``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from appliance.backend_names import BACKEND_NAMES
from appliance.cli.bench_liveness_cmd import add_liveness_arguments, bench_liveness
from appliance.cli.common import add_config_argument, check_fps, load_cli_settings
from appliance.device.catalog import load_profiles
from appliance.errors import ConfigError, OutputError
from appliance.inference.runtime import RuntimeChoice, choose_for_device
from appliance.media.sizes import parse_size
from appliance.modelstore import ModelStore
from appliance.paths import REPO_ROOT
from appliance.pipeline.factory import build_processor
from appliance.tools.bench import STAGES, VARIANTS, VariantResult, pooled_run, run_variant
from appliance.tools.bench_clips import (
    FACES,
    BenchClip,
    build_clips,
    build_group,
    demo_clip,
    video_clip,
)
from appliance.tools.bench_markdown import (
    check_writable,
    format_markdown,
    load_average,
    write_markdown,
)
from appliance.tools.bench_quality import (
    DEFAULT_FRAMES,
    QualityRow,
    format_quality,
    measure_quality,
    quality_markdown,
)
from appliance.tools.bench_targets import Check, check_targets, format_targets
from appliance.tools.cores import pin_cores
from appliance.tools.live_clip import JpegClip
from appliance.tools.thread_cpu import percent_line
from appliance.vision.identity import read_image

logger = logging.getLogger(__name__)

DEFAULT_MEDIA = REPO_ROOT.parent / "shared" / "media"
DEFAULT_MARKDOWN = REPO_ROOT / "docs" / "benchmarks.md"
# runs of every case: on a shared machine one run's p95 can be half again another's
REPEAT = 3
GROUP = "group"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("bench", help="benchmark a naive loop against the live pipeline")
    parser.add_argument("--frames", type=int, default=150, help="frames per clip and variant")
    parser.add_argument("--sizes", default="640x480,1280x720", help="comma-separated WxH")
    parser.add_argument(
        "--faces",
        default="1,3,group",
        help="cases: 1, 3 (tiled) and/or group (3 small faces, a tiled half-body shot)",
    )
    parser.add_argument(
        "--cores",
        type=int,
        default=None,
        help="hold the process to this many CPUs (1: a Raspberry-Pi-class budget)",
    )
    parser.add_argument(
        "--media",
        type=Path,
        default=DEFAULT_MEDIA,
        help="folder of .mp4 clips (default ../shared/media; the demo camera when none)",
    )
    parser.add_argument("--fps", type=float, default=30.0, help="live camera frame rate")
    parser.add_argument(
        "--repeat",
        type=int,
        default=REPEAT,
        help=f"runs of every case and variant, spread over the bench; a row's latencies are"
        f" over all its runs' frames (default {REPEAT})",
    )
    parser.add_argument(
        "--no-restarts",
        dest="restarts",
        action="store_false",
        help="decode every camera frame whole, as for a camera whose JPEGs carry no restart"
        " markers (default: a large frame is decoded in two halves at once)",
    )
    parser.add_argument("--identity", default="grace_hopper", help="identity photo")
    parser.add_argument(
        "--quality-frames",
        type=int,
        default=DEFAULT_FRAMES,
        metavar="N",
        help=f"after the timings, measure the 1-face swap of each clip over its first N frames"
        f" as `mirror eval` does (default {DEFAULT_FRAMES}; 0: no quality rows)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write results as JSON")
    parser.add_argument(
        "--markdown",
        type=Path,
        nargs="?",
        const=DEFAULT_MARKDOWN,
        default=None,
        metavar="FILE",
        help="also write the table as Markdown (default file docs/benchmarks.md)",
    )
    parser.add_argument(
        "--profile",
        default=None,
        help="load the models as `mirror run --profile NAME` would (its backend and ONNX "
        "variants; default: every model on LiteRT on the CPU)",
    )
    parser.add_argument(
        "--backends",
        default=None,
        help="with --profile: its backend order replaced by this one, e.g. cuda,onnx-cpu",
    )
    add_liveness_arguments(parser)
    add_config_argument(parser)
    parser.set_defaults(handler=_bench)


def _runtime(args: argparse.Namespace, store: ModelStore) -> RuntimeChoice | None:
    """The runtime choice ``--profile`` (and ``--backends``) ask for; None without them."""
    if args.profile is None:
        if args.backends is not None:
            raise ConfigError("--backends goes with --profile NAME")
        return None
    profiles = dict(load_profiles())
    if args.profile not in profiles:
        raise ConfigError(f"unknown profile {args.profile!r} (known: {', '.join(profiles)})")
    if args.backends is not None:
        order = [name.strip() for name in args.backends.split(",") if name.strip()]
        unknown = [name for name in order if name not in BACKEND_NAMES]
        if unknown or not order:
            raise ConfigError(
                f"--backends {args.backends!r}: choose from {', '.join(BACKEND_NAMES)}"
            )
        profiles[args.profile] = profiles[args.profile].model_copy(update={"backends": order})
    choice = choose_for_device(store, override=args.profile, profiles=profiles)
    for line in choice.describe():
        print(f"bench: {line}", flush=True)
    return choice


def _faces(text: str) -> tuple[tuple[int, ...], bool]:
    """The face counts asked for, and whether the group case is."""
    parts = [part.strip() for part in text.split(",")]
    group = GROUP in parts
    try:
        faces = tuple(int(part) for part in parts if part != GROUP)
    except ValueError:
        faces, group = (), False
    if not (faces or group) or any(f not in FACES for f in faces):
        raise ConfigError(
            f"--faces must list cases among {', '.join(map(str, FACES))} and {GROUP}, got {text!r}"
        )
    return faces, group


def _check(args: argparse.Namespace) -> None:
    if args.frames < 1:
        raise ConfigError(f"--frames must be at least 1, got {args.frames}")
    check_fps(args.fps)
    if args.repeat < 1:
        raise ConfigError(f"--repeat must be at least 1, got {args.repeat}")
    if args.quality_frames < 0:
        raise ConfigError(f"--quality-frames must be 0 or more, got {args.quality_frames}")
    if args.markdown is not None:
        check_writable(args.markdown)
    if args.cores is not None:
        pin_cores(args.cores)


def _base_clips(
    args: argparse.Namespace, store: ModelStore, sizes: list[tuple[int, int]]
) -> Iterator[tuple[str, JpegClip]]:
    """(name, 1-face clip) per input and size, built one at a time."""
    videos = sorted(args.media.glob("*.mp4")) if args.media.is_dir() else []
    if videos:
        print(f"bench: clips from {args.media}: {', '.join(v.name for v in videos)}", flush=True)
        for path in videos:
            for size in sizes:
                yield path.name, video_clip(path, size, args.frames)
        return
    print(f"bench: no .mp4 clips in {args.media}, using the demo camera", flush=True)
    image = read_image(store.path("astronaut"))
    for size in sizes:
        yield "demo", demo_clip(image, size, args.frames)


def _bench(args: argparse.Namespace) -> int:
    if args.liveness:
        return bench_liveness(args)
    _check(args)
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    faces, group = _faces(args.faces)
    settings = load_cli_settings(args)
    store = ModelStore()
    runtime = _runtime(args, store)
    processor = build_processor(settings, store, args.identity, runtime=runtime)
    if runtime is not None:
        args.runtime_lines = runtime.describe()
    load_before = load_average()
    clips: list[BenchClip] = []
    bases: list[tuple[str, JpegClip]] = []  # the 1-face clips, for the quality rows
    for name, base in _base_clips(args, store, sizes):
        bases.append((name, base))
        clips += build_clips(name, base, faces)
        if group:
            clips.append(build_group(name, base))
    runs: dict[tuple[int, str], list[VariantResult]] = {}
    # each repeat goes through every case before the next: a busy minute on a shared
    # machine then falls on one run of a case, and the median run leaves it out
    for repeat in range(1, args.repeat + 1):
        for index, clip in enumerate(clips):
            for variant in VARIANTS:
                result = run_variant(
                    variant, clip, processor, args.frames, fps=args.fps, restarts=args.restarts
                )
                runs.setdefault((index, variant), []).append(result)
                counted = f"run {repeat} of {args.repeat}: " if args.repeat > 1 else ""
                print(f"bench: {counted}{_progress(result)}", flush=True)
    results = [pooled_run(runs[(i, v)]) for i in range(len(clips)) for v in VARIANTS]
    checks = check_targets(results, args.cores)
    print()
    print(format_table(results))
    print()
    print(format_targets(checks))
    _print_load(load_before, load_average())
    after = load_average()  # before the quality rows: their work is not the timings'
    quality = measure_quality(bases, args.identity, settings, store, args.quality_frames)
    if quality:
        print()
        print(format_quality(quality, args.identity), flush=True)
    if args.json is not None:
        _write_json(args, results, checks, quality)
    if args.markdown is not None:
        load = None if load_before is None or after is None else (load_before, after)
        page = format_markdown(results, checks, _options(args), load=load)
        if quality:
            page += "\n" + quality_markdown(quality, args.identity)
        write_markdown(args.markdown, page)
        print(f"bench: figures written to {args.markdown}", flush=True)
    return 0


def _print_load(before: float | None, after: float | None) -> None:
    """The machine's load around the run: timings mean little on a busy machine."""
    if before is not None and after is not None:
        print(load_line(before, after, os.cpu_count() or 1), flush=True)


def load_line(before: float, after: float, cpus: int) -> str:
    """The load average before and after the run, on ``cpus`` CPUs (the machine's,
    whatever this process may use). The machine counts as busy when the load before
    the run was over half of its CPUs: the load after is the bench's own as much as
    anything (its process and swap helpers keep two CPUs busy: 1.97-2.79 after full
    runs on an otherwise idle 2-CPU machine)."""
    busy = before > cpus / 2
    return f"bench: load average (1 min) {before:.2f} before, {after:.2f} after, {cpus} CPU(s)" + (
        "; the machine was busy before the run, the timings are not this code's alone"
        if busy
        else ""
    )


def _progress(r: VariantResult) -> str:
    return (
        f"{r.clip} {r.size[0]}x{r.size[1]} {r.faces} face(s) {r.variant}: "
        f"{r.output_fps:.1f} fps, e2e p95 {_ms(r.e2e_ms['p95'])} ms, "
        f"{r.dropped_total} dropped, {r.stale_shown} stale shown, {r.faces_found:.1f} faces found"
        + (f", quality at the end: {r.extra['quality']}" if "quality" in r.extra else "")
        + "".join(f"; ladder {step}" for step in r.extra.get("ladder", []))
        + f"; CPU % by thread: {percent_line(r.thread_cpu_ms, r.wall_s)}"
    )


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "frames": args.frames,
        "fps": args.fps,
        "sizes": args.sizes,
        "faces": args.faces,
        "media": str(args.media),
        "identity": args.identity,
        "repeat": args.repeat,
        **(
            {"quality_frames": args.quality_frames} if args.quality_frames != DEFAULT_FRAMES else {}
        ),
        **({"cores": args.cores} if args.cores is not None else {}),
        **({} if args.restarts else {"no_restarts": True}),
        **({"profile": args.profile} if getattr(args, "profile", None) else {}),
        **({"backends": args.backends} if getattr(args, "backends", None) else {}),
        **({"runtime": args.runtime_lines} if getattr(args, "runtime_lines", None) else {}),
    }


def _write_json(
    args: argparse.Namespace,
    results: list[VariantResult],
    checks: list[Check],
    quality: list[QualityRow] | None = None,
) -> None:
    data: dict[str, Any] = {
        "options": _options(args),
        "results": [r.as_dict() for r in results],
        "targets": [asdict(c) for c in checks],
        "quality": [asdict(q) for q in quality or []],
    }
    try:
        args.json.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    except OSError as exc:
        raise OutputError(f"cannot write {args.json}: {exc}") from exc


# ---- report ---------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def format_table(results: list[VariantResult]) -> str:
    """One row per run: rate, end to end, drops, resources, then each stage's p50/p95."""
    header = (
        f"{'clip':24} {'size':9} {'faces':>5} {'variant':8} {'fps':>5} "
        f"{'e2e p50/p95/p99 ms':>19} {'drop':>4} {'stale':>5} {'cpu%':>5} {'rssMiB':>6} "
        f"{'found':>5} {'swap%':>5} {'cpu% by thread':24}"
    )
    header += "".join(f" {stage + ' p50/p95':>17}" for stage in STAGES)
    lines = [header, "-" * len(header)]
    for r in results:
        e2e = "/".join(_ms(r.e2e_ms[q]) for q in ("p50", "p95", "p99"))
        swap = 100.0 * r.swapped / r.frames_out if r.frames_out else 0.0
        line = (
            f"{r.clip[:24]:24} {f'{r.size[0]}x{r.size[1]}':9} {r.faces:5d} {r.variant:8} "
            f"{r.output_fps:5.1f} {e2e:>19} {r.dropped_total:4d} {r.stale_shown:5d} "
            f"{r.cpu_percent:5.0f} {r.peak_rss_mib:6.0f} {r.faces_found:5.2f} {swap:5.0f} "
            f"{percent_line(r.thread_cpu_ms, r.wall_s, top=3)[:24]:24}"
        )
        for stage in STAGES:
            s = r.stages_ms.get(stage)
            cell = "-" if s is None else f"{_ms(s['p50'])}/{_ms(s['p95'])}"
            line += f" {cell:>17}"
        lines.append(line)
    return "\n".join(lines)
