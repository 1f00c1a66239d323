"""Whether this Python environment has what the matched profile's ``install`` section asks.

The profile names the project's extras (``pi``, ``gpu``, ...) and whether the venv
sees the system's packages. Each extra's requirements are read from the installed
``face-mirror`` metadata and evaluated here (:mod:`packaging`), so the doctor can say
exactly which distribution is missing or too old, and the command that installs it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from appliance.device.profile import InstallSpec
from appliance.device.report import InstallReport

logger = logging.getLogger(__name__)

PROJECT = "face-mirror"
# Both are `import onnxruntime`; with both installed CUDA and TensorRT vanish.
CONFLICTS = (("onnxruntime", "onnxruntime-gpu"),)

VersionOf = Callable[[str], str | None]


def installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def project_requires() -> list[str]:
    try:
        return list(metadata.requires(PROJECT) or [])
    except metadata.PackageNotFoundError:
        return []


def venv_sees_system_packages(prefix: Path | None = None) -> bool:
    """``include-system-site-packages`` of this venv (a plain interpreter sees them anyway)."""
    base = prefix or Path(sys.prefix)
    cfg = base / "pyvenv.cfg"
    if not cfg.is_file():
        return True
    for line in cfg.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "include-system-site-packages":
            return value.strip().lower() == "true"
    return False


def _wanted(requires: list[str], extras: tuple[str, ...]) -> list[Requirement]:
    """The base requirements and those of ``extras`` whose markers hold here."""
    wanted = []
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            logger.warning("%s metadata: bad requirement %r", PROJECT, text)
            continue
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ("", *extras)):
            wanted.append(req)
    return wanted


def _unmet(req: Requirement, version_of: VersionOf) -> str | None:
    have = version_of(req.name)
    if have is None:
        return f"{req.name}{req.specifier} (not installed)"
    try:
        ok = req.specifier.contains(Version(have), prereleases=True)
    except InvalidVersion:
        ok = True
    return None if ok else f"{req.name}{req.specifier} (found {have})"


def check_install(
    spec: InstallSpec,
    *,
    requires: list[str] | None = None,
    version_of: VersionOf = installed_version,
    sees_system: bool | None = None,
) -> InstallReport:
    """What the profile's extras and venv setting need that this environment lacks."""
    requires = project_requires() if requires is None else requires
    unmet = (_unmet(req, version_of) for req in _wanted(requires, spec.extras))
    missing = [line for line in unmet if line is not None]
    conflicts = [
        f"{a} and {b} are both installed: uninstall {a} (it hides CUDA and TensorRT)"
        for a, b in CONFLICTS
        if version_of(a) is not None and version_of(b) is not None
    ]
    system = venv_sees_system_packages() if sees_system is None else sees_system
    extras = ",".join(spec.extras)
    command = None
    if missing:
        command = f"{sys.executable} -m pip install '{PROJECT}[{extras}]'"
    return InstallReport(
        extras=list(spec.extras),
        missing=missing,
        conflicts=conflicts,
        system_site_packages_wanted=spec.system_site_packages,
        system_site_packages=system,
        command=command,
    )
