"""``mirror update install|status|confirm``: updates of a card flashed with the A/B image.

``install BUNDLE|URL`` checks the bundle's signature against the card's certificate,
lets RAUC write it into the slot not running and reboots into it on trial
(:mod:`provisioning.update.install`); ``status`` shows both slots' versions and which one
runs; ``confirm`` runs at every boot (``mirror-update-confirm.service``) and keeps the
booted slot only when the mirror is healthy on it (:mod:`provisioning.update.confirm`).
A device installed without the image updates with ``mirror provision --bundle`` instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from provisioning.layout import Layout
from provisioning.runner import run_subprocess
from provisioning.service import Systemctl

if TYPE_CHECKING:
    from provisioning.update.confirm import Verdict

logger = logging.getLogger(__name__)

CONFIRM_TIMEOUT_S = 600.0  # a Pi 4's first start after an update takes about a minute


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("update", help="install an update bundle into the other A/B slot")
    verbs = parser.add_subparsers(dest="verb", metavar="install|status", required=True)
    install = verbs.add_parser("install", help="install BUNDLE (a .raucb file or an http URL)")
    install.add_argument("source", help="the bundle: a file, or an http(s):// URL")
    install.add_argument(
        "--no-reboot", action="store_true", help="install only; the next reboot stays on this slot"
    )
    install.set_defaults(handler=_install)
    status = verbs.add_parser("status", help="both slots' versions and which one runs")
    status.add_argument("--json", action="store_true", help="machine-readable")
    status.set_defaults(handler=_status)
    confirm = verbs.add_parser("confirm", help="(at boot) keep this slot only if healthy")
    confirm.add_argument(
        "--timeout", type=float, default=CONFIRM_TIMEOUT_S, help="seconds to become healthy"
    )
    confirm.set_defaults(handler=_confirm)
    queued = verbs.add_parser(
        "run-queued", help="(root, by mirror-update.path) the admin's request"
    )
    queued.set_defaults(handler=_run_queued)
    usb = verbs.add_parser("usb", help="(root, by udev) install the bundle on a USB stick")
    usb.add_argument("device", help="the stick's partition, /dev/sdX1")
    usb.set_defaults(handler=_usb)


def _say(message: str) -> None:
    print(f"mirror update: {message}", file=sys.stderr, flush=True)


def _install(args: argparse.Namespace) -> int:
    from provisioning.update.install import install_update

    layout = Layout(root=Path("/"))
    info = install_update(
        args.source,
        _say,
        download_dir=layout.host(layout.data_dir / "updates"),
        reboot=not args.no_reboot,
    )
    print(f"installed {info.version}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from appliance.updates.slots import slots_status

    status = slots_status()
    if args.json:
        print(json.dumps(asdict(status), indent=1))
        return 0
    for slot in status.slots:
        runs = " (running)" if slot.bootname == status.booted else ""
        nxt = " (boots next)" if slot.bootname == status.primary else ""
        good = "good" if slot.boot_good else "bad"
        version = slot.version or "as flashed"
        print(f"slot {slot.bootname}: {version}, {good}{runs}{nxt}")
    return 0


def _confirm(args: argparse.Namespace) -> int:
    from provisioning.health import ask_healthz
    from provisioning.update.confirm import confirm_boot, reboot_now

    layout = Layout(root=Path("/"))
    service = Systemctl(run_subprocess, dict(os.environ))
    verdict = confirm_boot(
        service,
        lambda: ask_healthz(layout),
        args.timeout,
        _say,
        reboot=lambda: None,  # after the staff are told
    )
    _say(verdict.said)
    _tell_staff(layout.host(layout.data_dir), verdict)
    if verdict.on_trial and not verdict.kept:
        reboot_now()
    return 0


def _tell_staff(data_dir: Path, verdict: Verdict) -> None:
    """The end of an update for the admin page, the screen and doctor: kept, or gone back."""
    from appliance.updates.queue import StatusWriter

    writer = StatusWriter(data_dir, f"slot {verdict.slot}")
    if verdict.on_trial:
        writer.set_state("done" if verdict.kept else "failed", verdict.said)
    elif verdict.abandoned is not None:
        writer.set_state(
            "failed",
            f"the update in slot {verdict.abandoned} did not start: back on slot {verdict.slot}",
        )


def _run_queued(args: argparse.Namespace) -> int:
    from provisioning.update.runner import run_queued

    layout = Layout(root=Path("/"))
    run_queued(layout.host(layout.data_dir), echo=_say)
    return 0


def _usb(args: argparse.Namespace) -> int:
    from provisioning.update.runner import install_from_stick

    layout = Layout(root=Path("/"))
    install_from_stick(args.device, layout.host(layout.data_dir), echo=_say)
    return 0
