"""``mirror eval``: swap identities onto clips and measure the result.

Every identity x input pair writes ``DIR/<clip>__<identity>.json`` and ``.png``
(a contact sheet) and prints its figures on one line; a summary table follows.
Needs the optional ``eval`` extra: ``pip install '.[eval]'``.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from appliance.cli.common import ProgressBar, add_config_argument, load_cli_settings
from appliance.errors import ConfigError
from appliance.eval.clips import open_clip
from appliance.eval.contact_sheet import contact_sheet, summary_lines
from appliance.eval.evaluate import (
    DEFAULT_EVERY,
    DEFAULT_MAX_FRAMES,
    EvalResult,
    Models,
    evaluate,
    output_stem,
    planned_frames,
)
from appliance.eval.recogniser import FaceRecogniser, RecogniserFiles
from appliance.eval.report import EvalReport
from appliance.label_disclosure import disclosed_label
from appliance.media.stills import save_still
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import resolve_photo
from appliance.vision.identity import read_image

logger = logging.getLogger(__name__)

DEFAULT_OUTPUT_DIR = Path("eval-reports")
_TABLE = (
    ("clip", 0, None),  # width 0: as wide as the longest value
    ("identity", 0, None),
    ("d_src", 6, ".3f"),
    ("d_orig", 6, ".3f"),
    ("moved", 5, ".2f"),
    ("d_unsw", 6, ".3f"),
    ("expr_r", 6, ".2f"),
    ("stab", 5, ".2f"),
    ("seam", 5, ".2f"),
    ("seam_o", 6, ".2f"),
    ("stretch", 7, ".2f"),
    ("gaze", 5, ".1f"),
    ("shade", 5, ".3f"),
    ("detail", 6, ".2f"),
    ("fill", 5, ".2f"),
    ("amp", 0, None),  # the worst blendshape's mean |swapped - original| and its name
    ("faces", 7, None),
)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "eval", help="measure swap quality on clips (needs: pip install '.[eval]')"
    )
    parser.add_argument(
        "--identity", required=True, action="append", help="identity photo or asset (repeatable)"
    )
    parser.add_argument(
        "--input",
        required=True,
        action="append",
        type=Path,
        help="video file or folder of images (repeatable)",
    )
    parser.add_argument(
        "--output-dir", type=Path, default=DEFAULT_OUTPUT_DIR, help="where reports go"
    )
    parser.add_argument(
        "--every", type=_positive, default=DEFAULT_EVERY, help="recogniser on every N-th frame"
    )
    parser.add_argument(
        "--max-frames", type=_positive, default=DEFAULT_MAX_FRAMES, help="frames per clip, at most"
    )
    parser.add_argument(
        "--recogniser-dir",
        type=Path,
        default=None,
        help="folder with the two dlib .dat files (default: the installed face_recognition_models)",
    )
    add_config_argument(parser)
    parser.set_defaults(handler=_eval)


def _eval(args: argparse.Namespace) -> int:
    settings = load_cli_settings(args)
    store = ModelStore()
    clips = [open_clip(path) for path in args.input]
    for identity in args.identity:
        read_image(resolve_photo(identity, store))  # a bad photo fails before any work
    if args.output_dir.exists() and not args.output_dir.is_dir():
        raise ConfigError(f"--output-dir {args.output_dir} exists and is not a folder")
    files = RecogniserFiles.in_dir(args.recogniser_dir) if args.recogniser_dir else None
    models = Models.load(settings, store, FaceRecogniser(files))
    reports = []
    for clip in clips:
        for identity in args.identity:
            bar = ProgressBar(planned_frames(clip, args.max_frames), f"eval {clip.name}")
            result = evaluate(
                identity,
                clip,
                settings,
                store,
                models=models,
                every=args.every,
                max_frames=args.max_frames,
                progress=bar.update,
            )
            bar.close()
            stem = output_stem(clip, Path(result.report.identity))
            _save(result, args.output_dir / stem, disclosed_label(settings.label.text))
            print(f"{stem}: {' | '.join(summary_lines(result.report))}", flush=True)
            reports.append(result.report)
    print(_table(reports))
    return 0


def _save(result: EvalResult, stem: Path, label_text: str) -> None:
    result.report.write_json(stem.with_suffix(".json"))
    sheet = contact_sheet(result.report, result.identity_photo, result.keeper.chosen())
    save_still(stem.with_suffix(".png"), sheet, ai_generated=True, label_text=label_text)


def _cell(value: object, width: int, fmt: str | None) -> str:
    """``value`` as text, padded to ``width``."""
    if value is None:
        text = "n/a"
    elif fmt is not None and isinstance(value, float):
        text = format(value, fmt)
    else:
        text = str(value)
    return text.ljust(width)


def _row(report: EvalReport) -> list[object]:
    return [
        Path(report.clip).name,
        Path(report.identity).name,
        report.d_src,
        report.d_orig,
        report.moved,
        report.d_src_unswapped,
        report.expression_mean,
        report.stability,
        report.seam,
        report.seam_original,
        report.stretch,
        report.gaze_error,
        report.shading,
        report.detail_ratio,
        report.fill_step,
        None
        if report.amplitude is None
        else f"{report.amplitude:.2f} {report.amplitude_blendshape}",
        f"{report.frames_with_face}/{report.frames}",
    ]


def _table(reports: list[EvalReport]) -> str:
    rows = [_row(report) for report in reports]
    widths = [
        max([len(name), *(len(_cell(row[n], 0, fmt)) for row in rows)]) if width == 0 else width
        for n, (name, width, fmt) in enumerate(_TABLE)
    ]
    header = " ".join(name.ljust(w) for (name, _, _), w in zip(_TABLE, widths, strict=True))
    lines = [header.rstrip(), "-" * len(header.rstrip())]
    for row in rows:
        cells = zip(row, _TABLE, widths, strict=True)
        lines.append(" ".join(_cell(v, w, f).ljust(w) for v, (_, _, f), w in cells).rstrip())
    return "\n".join(lines)
