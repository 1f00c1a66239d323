"""``mirror doctor``: probe, match, make the runtime choice, verify models, look at peripherals.

The result is a :class:`DoctorReport`. ``problems`` stop the mirror (models
missing or corrupt, no backend that works, a device it cannot run on, numpy 2
against the OS's cv2); ``updates`` describes the A/B slots and the last update
(``doctor.updates_check``); ``warnings`` degrade it (a camera that is not plugged
in: the demo source still works; a vendor part the accelerator lacks, with
what runs instead). Every input that
describes hardware is injectable, so tests run the whole doctor on faked roots.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from appliance.device.certificate import read_fingerprint
from appliance.device.facts import HardwareFacts
from appliance.device.match import MatchResult, match_profile
from appliance.device.nvidia import NvmlLoader, Runner, load_nvml, run_command
from appliance.device.peripherals import check_camera, check_display, check_gpio
from appliance.device.probe import is_live, probe
from appliance.device.profile import HardwareProfile
from appliance.device.report import CandidateReport, DoctorReport, ModelsReport, ProfileReport
from appliance.device.support import refusal
from appliance.doctor.backend_check import Chooser, check_backends
from appliance.doctor.install_check import check_install
from appliance.doctor.thermal_check import read_sensors
from appliance.doctor.updates_check import SlotsReader, check_updates
from appliance.doctor.vendor_check import VendorInputs, check_vendor
from appliance.doctor.verdict import problems_and_warnings
from appliance.inference.model_check import check_models
from appliance.inference.runtime import RuntimeChoice
from appliance.modelstore import ModelStore
from appliance.paths import data_dir, web_dir
from appliance.updates.slots import slots_status

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DoctorProbes:
    """What the doctor asks the hardware through; tests replace any of it."""

    chooser: Chooser | None = None
    nvml_loader: NvmlLoader = load_nvml
    runner: Runner = run_command
    prober: Callable[[Path], HardwareFacts] | None = None
    live: bool | None = None
    vendor: VendorInputs | None = None  # its root is the doctor's
    slots: SlotsReader = slots_status  # RAUC's A/B slots (read on a live system only)

    def facts(self, root: Path, live: bool) -> HardwareFacts:
        if self.prober is not None:
            return self.prober(root)
        return probe(root, live=live, nvml_loader=self.nvml_loader, runner=self.runner)


def _profile_report(result: MatchResult) -> ProfileReport:
    candidates = [
        CandidateReport(
            name=c.name,
            matched=c.matched,
            fallback=c.profile.fallback,
            rules=c.score,
            priority=c.profile.priority,
            failed=c.failed(),
        )
        for c in result.candidates
    ]
    return ProfileReport(
        name=result.profile.name,
        description=result.profile.description,
        reason=result.reason,
        overridden=result.overridden,
        target_fps=result.profile.target_fps,
        candidates=candidates,
    )


def run_doctor(
    root: Path,
    profiles: Mapping[str, HardwareProfile],
    store: ModelStore,
    *,
    override: str | None = None,
    probes: DoctorProbes | None = None,
) -> DoctorReport:
    """Check whether the mirror can run on the device under ``root``."""
    probes = probes or DoctorProbes()
    live = is_live(root) if probes.live is None else probes.live
    result = match_profile(profiles, probes.facts(root, live), override)
    profile = result.profile
    choice, backends = check_backends(result, store, probes.chooser)  # as `mirror run` chooses
    install = check_install(profile.install)
    if live:  # like the install check: this Python and this machine's models
        given = replace(probes.vendor or VendorInputs(), root=root)
        vendor = check_vendor(profile, result.facts, store, backends.chosen, given)
        install = install.model_copy(update={"vendor": vendor.missing, "broken": vendor.broken})
    report = DoctorReport(
        ok=True,
        problems=[],
        warnings=[],
        profile=_profile_report(result),
        facts=result.facts,
        backends=backends,
        models=_with_choice(check_models(store, profile.models.by_role()), choice),
        camera=check_camera(root, profile.capture),
        display=check_display(root, profile.display),
        gpio=check_gpio(root, profile.gpio),
        thermal=read_sensors(
            root, profile.thermal, live=live, nvml_loader=probes.nvml_loader, runner=probes.runner
        ),
        install=install,
        admin_certificate=read_fingerprint(web_dir()),
        updates=check_updates(data_dir(), live=live, read_slots=probes.slots),
    )
    problems, warnings = problems_and_warnings(report, matched=_matched(result), live=live)
    refused = refusal(profile, result.facts)
    if refused is not None:
        problems.insert(0, refused)
    for line in problems:
        logger.info("doctor: %s", line)
    return report.model_copy(
        update={"ok": not problems, "problems": problems, "warnings": warnings}
    )


def _with_choice(models: ModelsReport, choice: RuntimeChoice | None) -> ModelsReport:
    """Each role's detail also says which file runs it on which backend, as `mirror run` does."""
    if choice is None:
        return models
    chosen = {role.role: role for role in choice.roles if role.file is not None}
    roles = [
        r.model_copy(update={"detail": f"{r.detail}; runs {chosen[r.role].summary()}"})
        if r.role in chosen
        else r
        for r in models.roles
    ]
    return models.model_copy(update={"roles": roles})


def _matched(result: MatchResult) -> bool:
    return next(c.matched for c in result.candidates if c.name == result.profile.name)
