"""``mirror bench --liveness``: photo attacks against real videos, APCER and BPCER.

Runs the attack set (every still of a person in ``--media``, moved in front of
the camera for 10 s; ``--motions`` different motions each) and the real
videos through the tracker and the liveness gate in the configured mode (or
``--liveness-mode``), prints each clip's time to LIVE, then APCER and BPCER;
``--json`` also writes every figure.
"""

from __future__ import annotations

import argparse
import json
import logging

from appliance.cli.common import load_cli_settings
from appliance.errors import ConfigError, OutputError
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_analyzer
from appliance.tools.bench_liveness import (
    attack_stills,
    format_report,
    real_videos,
    run_liveness_bench,
)
from appliance.tools.real_variants import VARIANTS
from appliance.vision.liveness import MODES

logger = logging.getLogger(__name__)


def add_liveness_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--liveness",
        action="store_true",
        help="benchmark the liveness gate instead: photo attacks vs real videos (APCER/BPCER)",
    )
    parser.add_argument(
        "--liveness-mode",
        choices=MODES,
        default=None,
        help="with --liveness: the mode to test (default: the configured one)",
    )
    parser.add_argument(
        "--motions",
        type=int,
        default=1,
        help="with --liveness: different motions per attack photo (1)",
    )
    parser.add_argument(
        "--variants",
        default=None,
        help="with --liveness: the real-video variants to run, comma-separated "
        f"({','.join(v.name for v in VARIANTS)}; default all)",
    )
    parser.add_argument(
        "--no-slides",
        action="store_true",
        help="with --liveness: leave out the slide-over attacks",
    )


def _variants(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    known = {v.name for v in VARIANTS}
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise ConfigError(
            f"--variants {text!r}: unknown {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(sorted(known))}"
        )
    return names


def bench_liveness(args: argparse.Namespace) -> int:
    if args.motions < 1:
        raise ConfigError(f"--motions must be at least 1, got {args.motions}")
    variants = _variants(args.variants)
    if not attack_stills(args.media) and not real_videos(args.media):
        raise ConfigError(f"no liveness media (photos of people, the real videos) in {args.media}")
    settings = load_cli_settings(args)
    mode = args.liveness_mode or settings.liveness.mode
    analyzer = build_analyzer(settings, ModelStore())
    print(f"bench: liveness, mode {mode}, media {args.media}", flush=True)
    report = run_liveness_bench(
        args.media,
        analyzer,
        mode,
        motions=args.motions,
        variants=variants,
        slides=not args.no_slides,
        progress=lambda line: print(f"bench: {line}", flush=True),
    )
    print()
    print(format_report(report))
    if args.json is not None:
        try:
            args.json.write_text(json.dumps(report.as_dict(), indent=1) + "\n")
        except OSError as exc:
            raise OutputError(f"cannot write {args.json}: {exc}") from exc
    return 0
