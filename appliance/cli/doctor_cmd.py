"""``mirror doctor [--profile NAME] [--root DIR] [--json]``: can the mirror run here, and how.

Exit status 0 when it can; 1 with the reasons (one ``mirror: error:`` line on
stderr) when it cannot. Warnings (no camera, no display) do not fail it.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from appliance.device.catalog import load_profiles
from appliance.doctor.doctor import run_doctor
from appliance.doctor.text import render_text
from appliance.errors import BackendFallbackWarning
from appliance.modelstore import ModelStore


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("doctor", help="check the hardware, backends and models")
    parser.add_argument("--profile", default=None, help="use this hardware profile, not the match")
    parser.add_argument(
        "--root", type=Path, default=Path("/"), help="probe a mounted image or fake root (/)"
    )
    parser.add_argument(
        "--profiles-dir",
        type=Path,
        default=None,
        help="hardware profiles directory (default: hardware_profiles/)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    profiles = load_profiles(args.profiles_dir)
    with warnings.catch_warnings():
        # The report lists every backend fallback itself; the log keeps them too.
        warnings.simplefilter("ignore", BackendFallbackWarning)
        report = run_doctor(args.root, profiles, ModelStore(), override=args.profile)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print(render_text(report))
    if report.ok:
        return 0
    print(
        f"mirror: error: the mirror cannot run here: {'; '.join(report.problems)}",
        file=sys.stderr,
    )
    return 1
