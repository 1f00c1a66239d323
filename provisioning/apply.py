"""Carry out a plan under the target root: only the steps that change something.

Every file is written atomically (a temporary file and a rename). Models are
copied while hashed and land only when their sha256 still matches. The
admin password, when this run creates it, is returned to be printed once.
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
from provisioning import onnx_steps
from provisioning.actions import Action
from provisioning.copying import copy_verified
from provisioning.credentials import create_admin, create_secret_key
from provisioning.plan import Plan

logger = logging.getLogger(__name__)

Say = Callable[[str], None]
OnBytes = Callable[[int, str], None]


@dataclass
class ApplyReport:
    changed: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    password: str | None = None


def apply_plan(
    plan: Plan, manifest: Manifest, *, say: Say | None = None, on_bytes: OnBytes | None = None
) -> ApplyReport:
    tell = say or (lambda _msg: None)
    report = ApplyReport()
    for action in plan.actions:
        if action.status == "deferred":
            report.deferred.append(action.line())
        if not action.changes:
            continue
        _apply_one(plan, action, manifest, report, on_bytes)
        report.changed.append(action.line())
        tell(action.line())
    return report


def _apply_one(
    plan: Plan, action: Action, manifest: Manifest, report: ApplyReport, on_bytes: OnBytes | None
) -> None:
    layout = plan.layout
    host = layout.host(action.target)
    if action.kind == "dir":
        _make_dir(host, action.mode or 0o755)
    elif action.kind in ("file", "once"):
        assert action.data is not None and action.mode is not None
        atomic_write_bytes(host, action.data, action.mode)
    elif action.kind == "model":
        assert action.source is not None and action.mode is not None
        name = action.source.path.name
        tick = (lambda n: on_bytes(n, name)) if on_bytes is not None else None
        copy_verified(action.source.path, host, action.source.sha256, action.mode, tick)
    elif action.kind == "secret-key":
        create_secret_key(host)
    elif action.kind == "admin":
        report.password = create_admin(host, layout.host(layout.first_boot))
    else:
        _onnx_step(plan, action, manifest, report)


def _make_dir(host: os.PathLike[str], mode: int) -> None:
    try:
        os.makedirs(host, mode=mode, exist_ok=True)
        os.chmod(host, mode)
    except OSError as exc:
        raise OutputError(f"cannot create {host}: {exc.strerror or exc}") from exc


def _onnx_step(plan: Plan, action: Action, manifest: Manifest, report: ApplyReport) -> None:
    layout = plan.layout
    store = ModelStore(cache_dir=layout.host(layout.models_dir), manifest=manifest)
    try:
        if action.kind == "convert":
            onnx_steps.convert(store, action.names)
        else:
            onnx_steps.build_engines(store, action.names, layout.host(layout.data_dir))
    except MirrorError as exc:
        # The runtime makes both on first use: a slower first start, not a broken device.
        logger.warning("%s %s deferred to the first start: %s", action.kind, action.names, exc)
        report.deferred.append(f"{action.line()} (failed here: {exc})")
