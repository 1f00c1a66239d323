"""Compute the provisioning plan: every step, and whether the root already has it.

The plan is computed from a checked bundle and the target root without
writing anything: ``--dry-run`` prints it, :mod:`provisioning.apply` carries
out the steps that change something. Managed files (unit, udev rules,
sysusers, environment, web.yaml, the console's settings) and links (the
unit's wants link, getty masks) are rewritten when they differ; the config
and the secrets are created only when missing, never replaced. A new venv is
made (beside the one in use) only when the bundle's wheels or the profile's extras
changed.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import PurePosixPath

import yaml

from appliance.device.profile import HardwareProfile
from appliance.modelstore.hashing import sha256_file
from appliance.modelstore.manifest import Manifest
from appliance.modelstore.onnx_variants import RECORD_FILE, OnnxVariants, Variant
from appliance.modelstore.store import ModelStore
from provisioning import onnx_steps
from provisioning.actions import Action, Status, file_action
from provisioning.bundle import MODELS, ONNX_DIR, Bundle, BundleFile
from provisioning.console import console_actions
from provisioning.credentials import SECRET_MODE
from provisioning.in_root import shell_for
from provisioning.layout import ENV_FILE, SYSUSERS, UDEV_RULES, UNIT, Layout
from provisioning.links import enable_unit
from provisioning.live_steps import Which, live_actions
from provisioning.switch_step import switch_action
from provisioning.udev import render_udev_rules
from provisioning.units import render_env_file, render_sysusers, render_unit
from provisioning.vendor_steps import plan_vendor
from provisioning.venv_step import plan_venv

logger = logging.getLogger(__name__)

FILE_MODE = 0o644
CONFIG_TEXT = (
    "# Mirror settings (see appliance/config.py); the admin page edits this file.\n"
    "# Unset keys take their defaults; pipeline.target_fps defaults to the profile's.\n"
    "{}\n"
)


@dataclass(frozen=True)
class WebListen:
    """Where the admin page listens: 0.0.0.0 unless an address is given (see the README)."""

    host: str = "0.0.0.0"
    port: int = 8000


@dataclass(frozen=True)
class Plan:
    profile: HardwareProfile
    layout: Layout
    actions: tuple[Action, ...]

    @property
    def changes(self) -> tuple[Action, ...]:
        return tuple(a for a in self.actions if a.changes)

    def lines(self) -> list[str]:
        head = f"provisioning {self.layout.root} for profile {self.profile.name}"
        return [head, *(a.line() for a in self.actions)]


def build_plan(
    layout: Layout,
    profile: HardwareProfile,
    bundle: Bundle,
    manifest: Manifest,
    web: WebListen | None = None,
    *,
    which: Which = shutil.which,
    first_start_secrets: bool = False,
) -> Plan:
    """Every step in the order apply carries them out: files first, then the venv, the
    unit's enabling, the console, what the live system must be told, and last the switch
    to a new venv (its restart and health check on a running system)."""
    planner = _Planner(layout)
    planner.dirs()
    planner.models(bundle)
    planner.actions += plan_vendor(layout, bundle, which=which)
    planner.actions += plan_venv(layout, profile, bundle, shell_for(layout))
    venv = next(a for a in planner.actions if a.kind == "venv")
    planner.system_files(profile, web or WebListen())
    planner.actions.append(enable_unit(layout))
    planner.actions += console_actions(layout, profile)
    planner.secrets(deferred=first_start_secrets)
    planner.onnx(profile, bundle, manifest)
    changed = {a.target for a in planner.actions if a.changes}
    planner.actions += live_actions(layout, changed, which=which)
    switch = switch_action(layout, venv)
    if switch is not None:
        planner.actions.append(switch)
    return Plan(profile, layout, tuple(planner.actions))


class _Planner:
    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.actions: list[Action] = []

    def _mode_of(self, target: PurePosixPath) -> int | None:
        host = self.layout.host(target)
        return host.stat().st_mode & 0o7777 if host.exists() else None

    def dirs(self) -> None:
        layout = self.layout
        for target, mode in (
            (layout.data_dir, 0o750),
            (layout.models_dir, 0o755),
            (layout.web_dir, 0o700),
        ):
            current = self._mode_of(target)
            status: Status = "create" if current is None else "unchanged"
            if current is not None and current != mode:
                status = "update"
            self.actions.append(Action("dir", target, status, mode=mode))

    def models(self, bundle: Bundle) -> None:
        for name, source in sorted(bundle.models.items()):
            self._copy(self.layout.models_dir / name, source)

    def _copy(self, target: PurePosixPath, source: BundleFile) -> None:
        """A bundle file copied to ``target`` (sha256-checked); unchanged when it is there."""
        host = self.layout.host(target)
        status: Status = "create"
        if host.is_file():
            same = sha256_file(host) == source.sha256 and self._mode_of(target) == FILE_MODE
            status = "unchanged" if same else "update"
        self.actions.append(Action("model", target, status, mode=FILE_MODE, source=source))

    def system_files(self, profile: HardwareProfile, web: WebListen) -> None:
        layout = self.layout
        web_yaml = yaml.safe_dump({"host": web.host, "port": web.port}, sort_keys=False)
        for target, text in (
            (UNIT, render_unit(profile, layout)),
            (ENV_FILE, render_env_file(profile, layout)),
            (SYSUSERS, render_sysusers(profile, layout)),
            (UDEV_RULES, render_udev_rules()),
            (layout.web_config, web_yaml),
        ):
            self._file(target, text.encode("utf-8"), FILE_MODE)
        self._once(layout.config, CONFIG_TEXT.encode("utf-8"))

    def _file(self, target: PurePosixPath, data: bytes, mode: int) -> None:
        self.actions.append(file_action(self.layout, target, data, mode))

    def _once(self, target: PurePosixPath, data: bytes) -> None:
        status: Status = "unchanged" if self.layout.host(target).exists() else "create"
        self.actions.append(Action("once", target, status, mode=SECRET_MODE, data=data))

    def secrets(self, *, deferred: bool = False) -> None:
        layout = self.layout
        if deferred:  # an image: each device makes its own at its first start (mirror run)
            note = "made by the device at its first start"
            self.actions.append(Action("secret-key", layout.secret_key, "deferred", note=note))
            self.actions.append(Action("admin", layout.auth, "deferred", note=note))
            return
        key_status: Status = "unchanged" if layout.host(layout.secret_key).exists() else "create"
        self.actions.append(Action("secret-key", layout.secret_key, key_status, mode=SECRET_MODE))
        admin: Status = "unchanged" if layout.host(layout.auth).exists() else "create"
        note = "admin password generated, printed once" if admin == "create" else ""
        self.actions.append(Action("admin", layout.auth, admin, mode=SECRET_MODE, note=note))

    def onnx(self, profile: HardwareProfile, bundle: Bundle, manifest: Manifest) -> None:
        """The profile's ONNX variants, copied from the bundle (made where it was built)."""
        names = onnx_steps.onnx_models(profile)
        if not names:
            return
        onnx_dir = self.layout.models_dir / "onnx"
        usable: dict[str, Variant] = {}
        if RECORD_FILE in bundle.onnx:  # listed in bundle.json, so checked
            store = ModelStore(cache_dir=bundle.directory / MODELS, manifest=manifest)
            found = onnx_steps.usable_variants(
                OnnxVariants(store, bundle.directory / ONNX_DIR), names
            )
            usable = {name: v for name, v in found.items() if v.file in bundle.onnx}
        missing = tuple(n for n in names if n not in usable)
        if missing:
            note = onnx_steps.missing_note(missing, profile.name)
            logger.warning("%s", note)
            self.actions.append(Action("convert", onnx_dir, "deferred", names=missing, note=note))
        if not usable:
            return
        for file in (RECORD_FILE, *(v.file for v in usable.values())):
            self._copy(onnx_dir / file, bundle.onnx[file])
        if onnx_steps.needs_engines(profile):
            self.actions.append(self._engines(usable))

    def _engines(self, variants: dict[str, Variant]) -> Action:
        target = self.layout.data_dir / onnx_steps.TRT_CACHE
        names = tuple(variants)
        if self.layout.is_live() and onnx_steps.tensorrt_here():
            cache = self.layout.host(target)
            built = all(onnx_steps.engine_built(cache, v.sha256) for v in variants.values())
            status: Status = "unchanged" if built else "create"
            return Action("engines", target, status, names=names, note="TensorRT fp16")
        note = "cannot build here (needs the device's GPU): the runtime builds them at first start"
        return Action("engines", target, "deferred", names=names, note=note)
