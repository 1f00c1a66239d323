"""``mirror provision --bundle DIR [--root DIR] [--dry-run]`` and ``mirror provision bundle OUT``.

Provisioning writes into ``--root`` (default ``/``: the live system, as root)
everything a device needs to boot straight into the mirror: models from the
offline bundle (sha256-checked), the config, the per-device admin password
and secret key (0600), the systemd unit, sysusers and udev rules. A second run
changes nothing and says so. The admin page listens on 0.0.0.0 by default
(an image provisioned offline cannot know its DHCP address; the page needs
the per-device password); ``--web-host`` pins an address. An update on a running
device makes a new venv beside the one in use, switches ``/opt/mirror/venv`` to it,
restarts the service and goes back to the previous venv if it is not healthy within
``--health-timeout`` seconds (see ``provisioning.switch_step``).

The bundle's wheels are for one target: ``--target NAME`` (see
``provisioning.targets``), or ``--platform TAG --python X.Y``, or this
machine when neither is given.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path, PurePosixPath

from appliance.modelstore.manifest import load_manifest
from provisioning.bundle_build import build_bundle
from provisioning.errors import ProvisionError
from provisioning.layout import DEFAULT_VENV
from provisioning.plan import WebListen
from provisioning.provision import Outcome, Request, provision
from provisioning.switch_step import HEALTH_TIMEOUT_S
from provisioning.targets import TARGETS, choose


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("provision", help="set up a device (or an image) from a bundle")
    parser.add_argument("--bundle", type=Path, help="offline bundle directory (bundle.json)")
    parser.add_argument("--root", type=Path, default=Path("/"), help="target root (default /)")
    parser.add_argument("--profile", default=None, help="hardware profile (default: probe ROOT)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    parser.add_argument("--web-host", default="0.0.0.0", help="admin page address (0.0.0.0)")
    parser.add_argument("--web-port", type=int, default=8000, help="admin page port (8000)")
    parser.add_argument(
        "--venv", default=str(DEFAULT_VENV), help=f"the device's venv ({DEFAULT_VENV})"
    )
    parser.add_argument(
        "--health-timeout",
        type=float,
        default=HEALTH_TIMEOUT_S,
        metavar="SECONDS",
        help=f"an update on a running device: healthy within this or rolled back "
        f"({HEALTH_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--secrets-at-first-start",
        action="store_true",
        help="write no admin password or secret key: the device makes them (for images)",
    )
    parser.set_defaults(handler=_provision)
    verbs = parser.add_subparsers(dest="verb", metavar="bundle")
    p_bundle = verbs.add_parser("bundle", help="build an offline bundle into OUT")
    p_bundle.add_argument("out", type=Path, help="bundle directory to fill")
    p_bundle.add_argument("--profile", dest="bundle_profile", default=None, help="profile name")
    p_bundle.add_argument(
        "--from", dest="source", type=Path, default=None, help="take files from DIR, not pip"
    )
    p_bundle.add_argument(
        "--with-wheels", action="store_true", help="also pip-download the Python wheels"
    )
    p_bundle.add_argument(
        "--vendor",
        type=Path,
        default=None,
        metavar="DIR",
        help="also carry DIR's vendor files: NVIDIA's wheels (*.whl), Debian packages "
        "(libedgetpu1-std_*.deb), compiled Edge TPU models (*_edgetpu.tflite)",
    )
    p_bundle.add_argument(
        "--target",
        default=None,
        metavar="NAME",
        help=f"the device's OS for the wheels: {', '.join(sorted(TARGETS))}",
    )
    p_bundle.add_argument(
        "--platform", default=None, help="or a wheel platform tag, e.g. manylinux_2_36_aarch64"
    )
    p_bundle.add_argument("--python", default=None, help="with --platform: the device's X.Y")
    p_bundle.set_defaults(handler=_bundle)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _provision(args: argparse.Namespace) -> int:
    if args.bundle is None:
        print("mirror provision: error: --bundle DIR is required", file=sys.stderr)
        return 2
    if not args.health_timeout > 0:  # (NaN too)
        raise ProvisionError(f"--health-timeout must be above 0 seconds, got {args.health_timeout}")
    request = Request(
        root=args.root,
        bundle=args.bundle,
        profile=args.profile,
        dry_run=args.dry_run,
        web=WebListen(args.web_host, args.web_port),
        venv=PurePosixPath(args.venv),
        first_start_secrets=args.secrets_at_first_start,
        health_timeout_s=args.health_timeout,
    )
    outcome = provision(request, say=_say)
    _report(outcome)
    return 0


def _report(outcome: Outcome) -> None:
    plan = outcome.plan
    print(f"profile {plan.profile.name}: {outcome.why_profile}")
    if outcome.report is None:
        print("\n".join(plan.lines()))
        print(f"dry run: {len(plan.changes)} change(s) planned, nothing written")
        return
    report = outcome.report
    for line in report.changed:
        print(line)
    for line in report.deferred:
        print(f"note: {line}")
    if not report.changed:
        print(f"no change: {plan.layout.root} is already provisioned")
    else:
        print(f"{len(report.changed)} change(s) written under {plan.layout.root}")
    if report.password is not None:
        print(f"admin password (shown once; change it at the first login): {report.password}")


def _bundle(args: argparse.Namespace) -> int:
    target = choose(args.target, args.platform, args.python)
    index = build_bundle(
        args.out,
        load_manifest(),
        source=args.source,
        profile=args.bundle_profile,
        with_wheels=args.with_wheels,
        target=target,
        say=_say,
        vendor=args.vendor,
    )
    print(f"bundle written: {index}")
    return 0
