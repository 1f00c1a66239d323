"""``mirror identity check PHOTO [--json] [--preview OUT.jpg]``: is this photo a good identity?

Prints one line per check (good / usable with a hint / refused) and the
photo's verdict; ``--json`` prints the same as one JSON object (with each
render's figures). The last check, ``result``, grades what the swap will look
like (``appliance.eval.photo_grade``: the photo enrolled and swapped onto the
upload's demo faces, frontal and turned); ``--preview`` writes those renders
as the admin page shows them. Exit status 0 for a good or usable photo; a
refused one (no face, several faces, a face too small, a swap that would show
a seam or a half-face even on a frontal visitor) exits 1 with one ``mirror:
error:`` line saying why, after the report. An unreadable photo is one
``mirror: error:`` line.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from appliance.cli.common import add_config_argument, load_cli_settings
from appliance.control.enrollment import Enroller, preview_sheet
from appliance.errors import NoFaceError, OutputError
from appliance.eval.photo_grade import PhotoGrader
from appliance.fileio import atomic_write_bytes
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import resolve_photo
from appliance.vision.identity import enroll, read_image
from appliance.vision.identity_check import Assessment

logger = logging.getLogger(__name__)

CHECK_NAMES = {
    "faces": "faces",
    "size": "face size",
    "yaw": "head turn",
    "pitch": "chin up/down",
    "roll": "head tilt",
    "eyes": "eyes",
    "mouth": "mouth",
    "expression": "expression",
    "sharpness": "sharpness",
    "exposure": "exposure",
    "lighting": "lighting",
    "occlusion": "occlusion",
    "result": "on the demo faces",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    identity = sub.add_parser("identity", help="identity photos")
    actions = identity.add_subparsers(dest="identity_command", required=True, metavar="ACTION")
    check = actions.add_parser(
        "check", help="say whether a photo makes a good identity, and what would be better"
    )
    check.add_argument("photo", help="identity photo (file or asset name)")
    check.add_argument("--json", action="store_true", help="print the assessment as JSON")
    check.add_argument(
        "--preview",
        type=Path,
        metavar="OUT.jpg",
        help="write the swap on the demo faces (frontal and turned) as a JPEG",
    )
    add_config_argument(check)
    check.set_defaults(handler=_check)


def _check(args: argparse.Namespace) -> int:
    settings = load_cli_settings(args)
    store = ModelStore()
    path = resolve_photo(args.photo, store)
    image = read_image(path)
    enroller = Enroller.from_store(settings, store)
    assessment = enroller.checker.assess(image)
    renders: list[dict[str, object]] = []
    if not assessment.refused:  # what the swap will look like: the ``result`` check
        grader = PhotoGrader(enroller.previewer, enroller.views)
        graded = grader.grade(enroll(image, enroller.analyzer, path.stem))
        assessment = assessment.with_finding(graded.finding, graded.measures)
        renders = [figures.as_dict() for figures in grader.last]
        if args.preview is not None:
            _write(args.preview, preview_sheet(enroller.views, graded.images))
    if args.json:
        print(
            json.dumps({"photo": str(path), **assessment.as_dict(), "renders": renders}, indent=2)
        )
    else:
        print(report_text(str(path), assessment))
    if assessment.refused:
        raise NoFaceError(f"{path}: refused: {'; '.join(assessment.reasons())}")
    return 0


def _write(path: Path, data: bytes) -> None:
    try:
        atomic_write_bytes(path, data)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def report_text(name: str, assessment: Assessment) -> str:
    """One line per check, then the verdict."""
    lines = [
        f"  {f.verdict:<8} {CHECK_NAMES.get(f.check, f.check)}: {f.message}"
        for f in assessment.findings
    ]
    hints = len(assessment.hints())
    verdict: str = assessment.verdict
    if verdict == "usable":
        verdict += f" ({hints} hint{'s' if hints != 1 else ''})"
    return "\n".join([f"{name}: {verdict}", *lines])
