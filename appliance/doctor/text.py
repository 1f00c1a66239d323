"""The doctor's report as text for a person at a terminal."""

from __future__ import annotations

import time

from appliance.device.report import DoctorReport, SlotReport, UpdateStatusReport
from appliance.updates.queue import BUSY

_MARK = {True: "ok  ", False: "FAIL"}


def _profile(report: DoctorReport) -> list[str]:
    p = report.profile
    lines = [
        f"profile   {p.name}: {p.description}" + (" (--profile)" if p.overridden else ""),
        f"  why     {p.reason}",
        f"  target  {p.target_fps:g} fps",
    ]
    matched = [c.name for c in p.candidates if c.matched]
    lines.append(f"  matched {', '.join(matched) or 'none'}")
    return lines


def _facts(report: DoctorReport) -> list[str]:
    lines = [f"device    {report.facts.summary()}"]
    lines += [f"  note    {note}" for note in report.facts.notes]
    return lines


def _backends(report: DoctorReport) -> list[str]:
    b = report.backends
    lines = [f"backends  order {', '.join(b.order)}; chosen {b.chosen or 'none'}"]
    lines += [f"  {_MARK[a.ok]}    {a.name}: {a.reason}" for a in b.attempts]
    lines += [f"  fallback {f}" for f in b.fallbacks]
    lines += [
        f"  session  {s.role}: {s.file.rsplit('/', 1)[-1]} on "
        + (", ".join(s.providers) if s.providers else f"nothing ({s.error})")
        for s in b.sessions
    ]
    return lines


def _models(report: DoctorReport) -> list[str]:
    m = report.models
    lines = [f"models    cache {m.cache_dir}"]
    for f in m.files:
        sha = f"sha256 {f.actual_sha256[:12]}" if f.actual_sha256 else ""
        lines.append(f"  {f.status:8} {f.name:22} {sha}")
    for r in m.roles:
        lines.append(f"  {r.role:11} {r.model} ({r.status}: {r.detail})")
    return lines


def _peripherals(report: DoctorReport) -> list[str]:
    c, d, g = report.camera, report.display, report.gpio
    camera = f"found{f' ({c.name})' if c.name else ''}" if c.found else "not found"
    connected = ", ".join(d.connected) or "none connected"
    pins = ", ".join(f"{n}={p}" for n, p in g.pins.items()) or "none configured"
    chips = ", ".join(g.chips) or "no gpiochip"
    return [
        f"camera    {c.device} {c.resolution}@{c.fps:g} {c.fourcc}: {camera}",
        f"display   {d.connector} {d.resolution}: {connected}",
        f"gpio      {g.numbering or '-'} {pins}; {chips}",
    ]


def _thermal(report: DoctorReport) -> list[str]:
    t = report.thermal
    lines = [f"thermal   warm {t.warm_c:g} / hot {t.hot_c:g} / critical {t.critical_c:g} C"]
    for s in t.sensors:
        value = f"{s.temperature_c:.1f} C" if s.temperature_c is not None else s.detail
        lines.append(f"  {s.status:8} {s.path}: {value}")
    return lines


def _install(report: DoctorReport) -> list[str]:
    i = report.install
    extras = ", ".join(i.extras) or "none"
    state = "complete"
    if i.missing or i.conflicts or i.vendor or i.broken:
        state = "incomplete (see the warnings)" if not i.broken else "broken (see the problems)"
    system = "yes" if i.system_site_packages else "no"
    wanted = " (the profile wants them)" if i.system_site_packages_wanted else ""
    return [f"install   extras {extras}: {state}; system packages visible: {system}{wanted}"]


def _certificate(report: DoctorReport) -> list[str]:
    fingerprint = report.admin_certificate
    if fingerprint is None:
        return ["admin     certificate not made yet (the first `mirror run` makes it)"]
    return [f"admin     certificate SHA-256 {fingerprint}"]


def _updates(report: DoctorReport) -> list[str]:
    u = report.updates
    if not u.slots:
        lines = [f"updates   {u.detail}"]
    else:
        runs = next((s.bootname for s in u.slots if s.runs), "?")
        nxt = next((s.bootname for s in u.slots if s.boots_next), "?")
        lines = [f"updates   A/B slots: {runs} runs, {nxt} boots next"]
        lines += [_slot(s) for s in u.slots]
    if u.last is not None:
        lines.append(f"  last    {_last(u.last)}")
    return lines


def _slot(s: SlotReport) -> str:
    version = s.version or "as flashed"
    if s.installed:
        version += f" (installed {s.installed})"
    roles = [role for role, yes in (("runs", s.runs), ("boots next", s.boots_next)) if yes]
    good = "good" if s.boot_good else "bad"
    return f"  {s.bootname:7} {s.name} {version}: {s.state}, {good}" + (
        f"; {', '.join(roles)}" if roles else ""
    )


def _last(last: UpdateStatusReport) -> str:
    state = last.state if last.percent is None else f"{last.state} {last.percent}%"
    if last.state in BUSY and not last.under_way:
        state += " (ended by a restart)"
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last.at_unix))
    return f"{state}: {last.message} ({when})"


def render_text(report: DoctorReport) -> str:
    verdict = "the mirror can run here" if report.ok else "the mirror CANNOT run here"
    lines = [f"mirror doctor: {verdict}"]
    parts = (
        _profile,
        _facts,
        _backends,
        _models,
        _peripherals,
        _thermal,
        _install,
        _certificate,
        _updates,
    )
    for part in parts:
        lines += part(report)
    lines += [f"warning   {w}" for w in report.warnings]
    lines += [f"PROBLEM   {p}" for p in report.problems]
    return "\n".join(lines)
