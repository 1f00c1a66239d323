"""``mirror provision``: check the bundle, pick the profile, plan, then (unless a dry run) apply.

The bundle is fully checked (every file's sha256 against ``bundle.json`` and
the model manifest) before the plan is made, so a bad bundle fails with the
file named and the target root untouched.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from appliance.device.catalog import load_profiles
from appliance.device.match import match_profile
from appliance.device.probe import probe
from appliance.device.profile import HardwareProfile
from appliance.device.support import refusal
from appliance.modelstore.manifest import Manifest, load_manifest
from provisioning.apply import ApplyReport, apply_plan
from provisioning.bundle import read_index, verify_bundle
from provisioning.errors import ProvisionError
from provisioning.in_root import shell_for
from provisioning.install_lock import install_lock
from provisioning.layout import DEFAULT_VENV, Layout
from provisioning.live_steps import Which
from provisioning.plan import Plan, WebListen, build_plan
from provisioning.progress import ByteProgress
from provisioning.runner import Runner, run_subprocess
from provisioning.service import ServiceControl, Systemctl
from provisioning.switch_step import HEALTH_TIMEOUT_S

logger = logging.getLogger(__name__)

Say = Callable[[str], None]


@dataclass(frozen=True)
class Request:
    root: Path
    bundle: Path
    profile: str | None = None
    dry_run: bool = False
    web: WebListen = field(default_factory=WebListen)
    venv: PurePosixPath = DEFAULT_VENV
    # tests and staging (see Layout): a temp root taken for the live system; the venv made
    # with this machine's interpreter at host paths
    live: bool | None = None
    host_python: Path | None = None
    # an image for many devices: no admin password or secret key written (see build_plan)
    first_start_secrets: bool = False
    # an update on a running system: the new venv must be healthy within this (switch_step)
    health_timeout_s: float = HEALTH_TIMEOUT_S


@dataclass(frozen=True)
class Outcome:
    plan: Plan
    report: ApplyReport | None  # None for a dry run
    why_profile: str


def pick_profile(root: Path, override: str | None) -> tuple[HardwareProfile, str]:
    """The profile named, or the one the probe of ``root`` matches; and why.

    A device the mirror cannot run on (``appliance.device.support``) is refused here,
    before anything is written."""
    match = match_profile(load_profiles(), probe(root), override)
    refused = refusal(match.profile, match.facts)
    if refused is not None:
        raise ProvisionError(f"{refused}; nothing was written")
    return match.profile, match.reason


def _bundle_size(bundle: Path) -> int:
    files = read_index(bundle)["files"]
    return sum(int(meta.get("size", 0)) for meta in files.values() if isinstance(meta, dict))


def provision(
    request: Request,
    manifest: Manifest | None = None,
    *,
    progress: bool = True,
    runner: Runner = run_subprocess,
    which: Which = shutil.which,
    say: Say | None = None,
    service: ServiceControl | None = None,
) -> Outcome:
    """``service``: restarted after a new venv on a running system (default: systemctl)."""
    manifest = manifest or load_manifest()
    bar = ByteProgress(_bundle_size(request.bundle), "verifying") if progress else None
    bundle = verify_bundle(
        request.bundle, manifest, (lambda name, n: bar.add(n, name)) if bar else None
    )
    if bar:
        bar.close()
    profile, why = pick_profile(request.root, request.profile or bundle.profile)
    layout = Layout(
        root=request.root, venv=request.venv, live=request.live, host_python=request.host_python
    )
    # one install at a time, planned and applied with no other in between (a dry run and a
    # bundle that fails its check write nothing, not even the lock)
    with nullcontext() if request.dry_run else install_lock(layout):
        plan = build_plan(
            layout,
            profile,
            bundle,
            manifest,
            request.web,
            which=which,
            first_start_secrets=request.first_start_secrets,
        )
        if request.dry_run:
            return Outcome(plan, None, why)
        copying = sum(a.source.size for a in plan.changes if a.source is not None)
        copy_bar = ByteProgress(copying, "installing") if progress and copying else None
        report = apply_plan(
            plan,
            manifest,
            say=say,
            on_bytes=(lambda n, _name: copy_bar.add(n)) if copy_bar else None,
            runner=runner,
            service=service or Systemctl(runner, shell_for(layout).env()),
            health_timeout_s=request.health_timeout_s,
        )
        if copy_bar:
            copy_bar.close()
    return Outcome(plan, report, why)
