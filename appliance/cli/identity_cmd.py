"""``mirror identity check PHOTO [--json]``: is this photo a good identity?

Prints one line per check (good / usable with a hint / refused) and the
photo's verdict; ``--json`` prints the same as one JSON object. Exit status 0
for a good or usable photo; a refused one (no face, several faces, a face
too small) exits 1 with one ``mirror: error:`` line saying why, after the
report. An unreadable photo is one ``mirror: error:`` line.
"""

from __future__ import annotations

import argparse
import json
import logging

from appliance.cli.common import add_config_argument, load_cli_settings
from appliance.errors import NoFaceError
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_analyzer, resolve_photo
from appliance.vision.identity import read_image
from appliance.vision.identity_check import Assessment, IdentityChecker

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
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    identity = sub.add_parser("identity", help="identity photos")
    actions = identity.add_subparsers(dest="identity_command", required=True, metavar="ACTION")
    check = actions.add_parser(
        "check", help="say whether a photo makes a good identity, and what would be better"
    )
    check.add_argument("photo", help="identity photo (file or asset name)")
    check.add_argument("--json", action="store_true", help="print the assessment as JSON")
    add_config_argument(check)
    check.set_defaults(handler=_check)


def _check(args: argparse.Namespace) -> int:
    settings = load_cli_settings(args)
    store = ModelStore()
    path = resolve_photo(args.photo, store)
    image = read_image(path)
    checker = IdentityChecker.for_analyzer(build_analyzer(settings, store), store)
    assessment = checker.assess(image)
    if args.json:
        print(json.dumps({"photo": str(path), **assessment.as_dict()}, indent=2))
    else:
        print(report_text(str(path), assessment))
    if assessment.refused:
        raise NoFaceError(f"{path}: refused: {'; '.join(assessment.reasons())}")
    return 0


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
