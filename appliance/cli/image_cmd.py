"""``mirror image build --profile NAME --bundle DIR --out FILE.img`` and ``mirror image firstboot``.

``build`` makes a flashable image (see :mod:`provisioning.image.build`);
``firstboot`` runs on the device at every boot of such an image
(``mirror-firstboot.service``): it applies the venue file from the boot partition
and, on the live system, sets the hostname, starts Wi-Fi or SSH when the file
asks for them and grows the root to fill the card. A bad venue file's problem is
logged and left in ``/run/mirror/venue-problem`` for the HDMI screen
(:mod:`appliance.media.venue_problem`).
"""

from __future__ import annotations

import argparse
import logging
import socket
import subprocess
import sys
from pathlib import Path

from appliance.media.venue_problem import VENUE_PROBLEM, write_venue_problem
from provisioning.image.build import BuildRequest, build_image
from provisioning.image.firstboot import Applied, apply_venue
from provisioning.image.growdata import grow_data
from provisioning.image.root_files import VENUE_FILE
from provisioning.image.spec import MIB
from provisioning.image.venue import read_venue

logger = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("image", help="build a flashable device image")
    verbs = parser.add_subparsers(dest="verb", metavar="build|keygen", required=True)
    build = verbs.add_parser("build", help="build FILE.img for a profile from a bundle")
    build.add_argument("--profile", required=True, help="hardware profile (rpi4-*)")
    build.add_argument("--bundle", required=True, type=Path, help="offline bundle directory")
    build.add_argument("--out", required=True, type=Path, help="the image file (FILE.img)")
    build.add_argument("--root-mib", type=int, default=None, help="root partition size (3072)")
    build.add_argument(
        "--refresh", action="store_true", help="fetch new Debian package lists (else cached)"
    )
    build.add_argument(
        "--signing-key", type=Path, help="the installer's update key: also write FILE.raucb"
    )
    build.add_argument(
        "--signing-cert", type=Path, help="its certificate: the image takes bundles signed by it"
    )
    build.add_argument("--bundle-version", help="the update bundle's version (the mirror's)")
    build.add_argument(
        "--bundle-only",
        action="store_true",
        help="only the update bundle: --out FILE.raucb, no card image",
    )
    build.set_defaults(handler=_build)
    keygen = verbs.add_parser("keygen", help="make the installer's update-signing pair, once")
    keygen.add_argument("--out", required=True, type=Path, help="a folder kept off the devices")
    keygen.set_defaults(handler=_keygen)
    first = verbs.add_parser("firstboot", help="(on the device, at boot) apply the venue file")
    first.add_argument("--root", type=Path, default=Path("/"), help="the device root (/)")
    first.add_argument("--boot-file", default=str(VENUE_FILE), help="the venue file")
    first.set_defaults(handler=_firstboot)


def _build(args: argparse.Namespace) -> int:
    root_bytes = args.root_mib * MIB if args.root_mib else None
    request = BuildRequest(
        args.profile,
        args.bundle,
        args.out,
        root_bytes,
        args.refresh,
        signing_key=args.signing_key,
        signing_cert=args.signing_cert,
        bundle_version=args.bundle_version,
        bundle_only=args.bundle_only,
    )
    built = build_image(request)
    if not args.bundle_only:
        print(f"image written: {built.image}")
    if built.update_bundle is not None:
        print(f"update bundle: {built.update_bundle}")
    else:
        print(
            "mirror: warning: no --signing-key/--signing-cert: cards flashed with this image "
            "take no update bundle (make a pair once with `mirror image keygen`, keep the key)",
            file=sys.stderr,
        )
    print(f"manifest: {built.manifest}")
    return 0


def _keygen(args: argparse.Namespace) -> int:
    from provisioning.image.signing_keys import make_signing_pair

    key, cert = make_signing_pair(args.out)
    print(f"signing key (keep it off the devices, 0600): {key}")
    print(f"certificate (goes into each image): {cert}")
    return 0


def _say(message: str) -> None:
    print(f"mirror-firstboot: {message}", file=sys.stderr, flush=True)


def _firstboot(args: argparse.Namespace) -> int:
    root: Path = args.root
    boot_file = root / str(args.boot_file).lstrip("/")
    venue, problem = read_venue(boot_file, root / "usr/share/zoneinfo")
    if problem is not None:
        logger.error("venue file: %s", problem)
        _say(f"error: {problem}")
    try:
        write_venue_problem(root / str(VENUE_PROBLEM).lstrip("/"), problem)
    except OSError as exc:  # the screen misses the line; the journal has it
        _say(f"cannot leave the problem for the screen: {exc.strerror}")
    applied = apply_venue(root, venue)
    _say(f"hostname {applied.hostname}; admin port {venue.admin_port}; time zone {venue.timezone}")
    for line in applied.changed:
        _say(line)
    if root.resolve() == Path("/"):
        _live(applied)
    return 0


def _live(applied: Applied) -> None:
    try:
        socket.sethostname(applied.hostname)
    except OSError as exc:
        _say(f"cannot set the hostname now: {exc.strerror}")
    for unit in applied.stop:
        subprocess.run(["systemctl", "--no-block", "stop", unit], check=False)
    for unit in applied.start:
        subprocess.run(["systemctl", "--no-block", "start", unit], check=False)
    _say(grow_data())
