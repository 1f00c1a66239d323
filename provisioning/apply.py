"""Carry out a plan under the target root: only the steps that change something.

Every file is written atomically (a temporary file and a rename). Models and
wheels are copied while hashed and land only when their sha256 still matches.
The admin password, when this run creates it, is returned to be printed once.
Programs (the venv's python and pip, the live system's systemd tools) run
through the injected runner; a new venv is made in its own folder and its stamp
is written only after pip succeeded, so a failed or killed install is made
again by the next run (which first removes the unfinished folder), and the
``/opt/mirror/venv`` link is switched last (:mod:`provisioning.switch_step`:
with a restart and a health check on a running system). A live-system
tool that fails (a container without a running systemd) is reported, not fatal:
the files are in place and systemd reads them at the next boot.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from appliance.errors import MirrorError, OutputError
from appliance.fileio import atomic_write_bytes
from appliance.modelstore.manifest import Manifest
from appliance.modelstore.store import ModelStore
from provisioning import onnx_steps, venvs
from provisioning.actions import Action
from provisioning.copying import copy_verified
from provisioning.credentials import create_admin, create_secret_key
from provisioning.errors import ProvisionError
from provisioning.in_root import shell_for
from provisioning.links import make_link
from provisioning.plan import Plan
from provisioning.runner import Runner, run_subprocess
from provisioning.service import ServiceControl
from provisioning.switch_step import HEALTH_TIMEOUT_S, switch
from provisioning.vendor_steps import CPU_MEANWHILE
from provisioning.venvs import STAMP

logger = logging.getLogger(__name__)

Say = Callable[[str], None]
OnBytes = Callable[[int, str], None]


@dataclass
class ApplyReport:
    changed: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    password: str | None = None


@dataclass(frozen=True)
class _Context:
    plan: Plan
    manifest: Manifest
    report: ApplyReport
    on_bytes: OnBytes | None
    runner: Runner
    say: Say
    service: ServiceControl | None
    health_timeout_s: float


def apply_plan(
    plan: Plan,
    manifest: Manifest,
    *,
    say: Say | None = None,
    on_bytes: OnBytes | None = None,
    runner: Runner = run_subprocess,
    service: ServiceControl | None = None,
    health_timeout_s: float = HEALTH_TIMEOUT_S,
) -> ApplyReport:
    """``service``: what the switch to a new venv restarts on a running system (None:
    nothing is restarted)."""
    tell = say or (lambda _msg: None)
    report = ApplyReport()
    context = _Context(plan, manifest, report, on_bytes, runner, tell, service, health_timeout_s)
    for action in plan.actions:
        if action.status == "deferred":
            report.deferred.append(action.line())
        if not action.changes:
            continue
        if action.kind == "venv":
            tell(f"making {action.target} (pip, offline: this takes a while)")
        _apply_one(context, action)
        report.changed.append(action.line())
        tell(action.line())
    return report


def _apply_one(context: _Context, action: Action) -> None:
    plan, report = context.plan, context.report
    layout = plan.layout
    host = layout.host(action.target)
    if action.kind == "dir":
        _make_dir(host, action.mode or 0o755)
    elif action.kind in ("file", "once"):
        assert action.data is not None and action.mode is not None
        atomic_write_bytes(host, action.data, action.mode)
    elif action.kind == "link":
        assert action.points_to is not None
        make_link(host, action.points_to)
    elif action.kind == "venv":
        _make_venv(context, action)
    elif action.kind == "switch":
        switch(layout, action, context.service, context.health_timeout_s, context.say)
    elif action.kind == "command":
        _run_live(context, action)
    elif action.kind == "package":
        _install_package(context, action)
    elif action.kind in ("model", "wheel", "vendor"):
        assert action.source is not None and action.mode is not None
        name = action.source.path.name
        on_bytes = context.on_bytes
        tick = (lambda n: on_bytes(n, name)) if on_bytes is not None else None
        copy_verified(action.source.path, host, action.source.sha256, action.mode, tick)
    elif action.kind == "secret-key":
        create_secret_key(host)
    elif action.kind == "admin":
        report.password = create_admin(host, layout.host(layout.first_boot))
    else:
        _onnx_step(plan, action, context.manifest, report)


def _make_venv(context: _Context, action: Action) -> None:
    """A new venv in its own folder (the one in use untouched), its stamp written last."""
    layout = context.plan.layout
    for name in venvs.remove_unfinished(layout):
        context.say(f"removed the unfinished venv {layout.venvs_dir / name}")
    host = layout.host(action.target)
    if venvs.is_finished(host):
        return  # made by an earlier install (the previous venv): switched back to
    venvs.remove_folder(layout, action.target.name)
    env = shell_for(layout).env()
    for argv in action.commands:
        result = context.runner(argv, env)
        if result.returncode != 0:
            venvs.remove_folder(layout, action.target.name)
            raise ProvisionError(
                f"making {action.target} failed at `{' '.join(argv)}`: {result.last_line()}; "
                f"{layout.venv} is as it was"
            )
    assert action.data is not None
    atomic_write_bytes(host / STAMP, action.data)


def _run_live(context: _Context, action: Action) -> None:
    _run_commands(context, action, "done at the next boot")


def _install_package(context: _Context, action: Action) -> None:
    """``dpkg -i`` of a vendor package; a failure is reported with its mend, not fatal."""
    mend = f"install its dependencies (apt-get install -f) and run it again; {CPU_MEANWHILE}"
    _run_commands(context, action, mend)


def _run_commands(context: _Context, action: Action, mend: str) -> None:
    """Run the action's commands in turn; the first that fails stops them and is reported,
    with ``mend``, as deferred (not fatal)."""
    env = shell_for(context.plan.layout).env()
    for argv in action.commands:
        result = context.runner(argv, env)
        if result.returncode != 0:
            said = result.last_line()
            logger.warning("%s failed: %s", " ".join(argv), said)
            context.report.deferred.append(f"{' '.join(argv)} failed ({said}): {mend}")
            return


def _make_dir(host: os.PathLike[str], mode: int) -> None:
    try:
        os.makedirs(host, mode=mode, exist_ok=True)
        os.chmod(host, mode)
    except OSError as exc:
        raise OutputError(f"cannot create {host}: {exc.strerror or exc}") from exc


def _onnx_step(plan: Plan, action: Action, manifest: Manifest, report: ApplyReport) -> None:
    layout = plan.layout
    store = ModelStore(cache_dir=layout.host(layout.models_dir), manifest=manifest)
    try:  # the engines (ONNX variants are copied from the bundle; the device never converts)
        onnx_steps.build_engines(store, action.names, layout.host(layout.data_dir))
    except MirrorError as exc:
        # The runtime builds them on first use: a slower first start, not a broken device.
        logger.warning("%s %s deferred to the first start: %s", action.kind, action.names, exc)
        report.deferred.append(f"{action.line()} (failed here: {exc})")
