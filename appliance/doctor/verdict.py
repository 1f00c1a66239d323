"""The doctor's verdict: what stops the mirror (problems) and what degrades it (warnings).

Each line says what is wrong and what to do about it.
"""

from __future__ import annotations

from appliance.device.report import (
    BackendsReport,
    CameraReport,
    DisplayReport,
    DoctorReport,
    GpioReport,
    InstallReport,
    ModelsReport,
    ThermalReport,
)
from appliance.modelstore.store import FIX_HINT


def _model_problems(models: ModelsReport) -> list[str]:
    bad = [f"{f.name} ({f.status})" for f in models.files if f.status != "ok"]
    if not bad:
        return []
    return [f"{len(bad)} model file(s) missing or corrupt: {', '.join(bad)}; {FIX_HINT}"]


def _model_warnings(models: ModelsReport) -> list[str]:
    return [
        f"{r.role} model {r.model!r} is not installed ({r.detail})"
        for r in models.roles
        if r.status == "not-installed"
    ]


def _backend_problems(backends: BackendsReport) -> list[str]:
    if backends.chosen is not None:
        return []
    why = "; ".join(f"{a.name}: {a.reason}" for a in backends.attempts) or "nothing was tried"
    return [f"no inference backend works ({why}); check the runtime install (pip install -e .)"]


def _backend_warnings(backends: BackendsReport) -> list[str]:
    if backends.chosen is None or not backends.order or backends.chosen == backends.order[0]:
        return []
    failed = "; ".join(f"{a.name}: {a.reason}" for a in backends.attempts if not a.ok)
    return [
        f"backend {backends.chosen} instead of {backends.order[0]} "
        f"({failed or 'no reason given'}); it runs slower"
    ]


def _install_warnings(install: InstallReport) -> list[str]:
    lines = list(install.conflicts) + list(install.vendor)
    if install.missing:
        lines.append(
            f"this Python lacks what the profile's extras ({', '.join(install.extras)}) need: "
            f"{', '.join(install.missing)}; install with: {install.command}"
        )
    if install.system_site_packages_wanted and not install.system_site_packages:
        lines.append(
            "this venv does not see the system's Python packages (Picamera2, JetPack's cv2 "
            "and TensorRT come from there): recreate it with `python3 -m venv "
            "--system-site-packages`, or let `mirror provision` make it"
        )
    return lines


def _camera_warnings(camera: CameraReport) -> list[str]:
    if camera.found or not camera.required:
        return []
    return [
        f"camera {camera.device} not found; plug it in, or run `mirror run --source demo`"
        " (the demo source works without one)"
    ]


def _display_warnings(display: DisplayReport) -> list[str]:
    if display.ok:
        return []
    seen = ", ".join(display.connected) or "none"
    wanted = "display" if display.connector == "any" else f"{display.connector} display"
    return [f"no {wanted} connected (connected: {seen}); the preview stream still works"]


def _gpio_warnings(gpio: GpioReport) -> list[str]:
    if gpio.ok:
        return []
    pins = ", ".join(f"{name}={pin}" for name, pin in gpio.pins.items())
    return [f"GPIO pins {pins} configured but no /dev/gpiochip* found; LED and button are off"]


def _thermal_warnings(thermal: ThermalReport) -> list[str]:
    if not thermal.sensors:
        return ["no thermal sensor configured; the governor runs conservatively"]
    readings = [s.temperature_c for s in thermal.sensors if s.temperature_c is not None]
    if not readings:
        listed = ", ".join(f"{s.path} ({s.status})" for s in thermal.sensors)
        return [f"no thermal sensor readable ({listed}); the governor runs conservatively"]
    hottest = max(readings)
    if hottest >= thermal.critical_c:
        return [f"{hottest:.1f} C is above critical ({thermal.critical_c:g} C): swapping stops"]
    if hottest >= thermal.hot_c:
        return [f"{hottest:.1f} C is above hot ({thermal.hot_c:g} C): the mirror runs light"]
    return []


def problems_and_warnings(
    report: DoctorReport, *, matched: bool, live: bool
) -> tuple[list[str], list[str]]:
    problems = _model_problems(report.models) + _backend_problems(report.backends)
    warnings = list(report.facts.notes)
    if not live:
        warnings.append(
            f"probed {report.facts.root}: backends and models were checked on the running "
            "machine, not under that root"
        )
    if report.profile.overridden and not matched:
        warnings.append(f"profile {report.profile.name} does not match this device")
    warnings += (
        _backend_warnings(report.backends)
        + _model_warnings(report.models)
        + _camera_warnings(report.camera)
        + _display_warnings(report.display)
        + _gpio_warnings(report.gpio)
        + _thermal_warnings(report.thermal)
    )
    if live:  # the install check is about this Python, which a probed root does not run
        warnings += _install_warnings(report.install)
        problems += report.install.broken
    return problems, warnings
