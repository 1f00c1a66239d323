"""The Python wheels of a bundle: the project's own wheel, then its dependencies for the target.

The project wheel is built from the source checkout (``pip wheel --no-deps``)
when the tool runs from one, else taken from ``--from DIR`` (the tool then runs
from an installed wheel and has no source tree). Its metadata gives the
dependencies with the profile's extras, evaluated for the target; ``pip
download`` fetches them, and pip itself (the device's venv is made without
ensurepip and gets pip from the bundle), for every platform tag the target
accepts. The wheels land in a fresh folder that replaces ``OUT/wheels`` only
when everything was had, so a failed run leaves an earlier bundle as it was.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from appliance.errors import OutputError
from appliance.paths import REPO_ROOT
from provisioning import requirements
from provisioning.errors import ProvisionError
from provisioning.targets import Target, platform_tags

logger = logging.getLogger(__name__)

Say = Callable[[str], None]
PROJECT_WHEEL = re.compile(r"^face_mirror-([^-]+)-.*\.whl$")
_NOT_FOUND = re.compile(r"No matching distribution found for (\S+)")
_ERROR = re.compile(r"^ERROR: (.+)$")
_SHOWN = ("Collecting ", "Saved ", "File was already downloaded ", "Successfully ")


@dataclass(frozen=True)
class WheelSet:
    """What the bundle's wheels were made for, recorded in ``bundle.json``."""

    target: Target
    extras: tuple[str, ...]
    project_version: str
    project_wheel: str  # its file name ("" when the wheels are not in the bundle)
    requirements: tuple[str, ...]
    commands: tuple[tuple[str, ...], ...]


def source_checkout() -> Path | None:
    """The source tree this tool runs from, if it runs from one (else an installed wheel)."""
    return REPO_ROOT if (REPO_ROOT / "pyproject.toml").is_file() else None


def project_command(wheels: Path, source: Path) -> list[str]:
    return [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(wheels), str(source)]


def download_command(wheels: Path, target: Target, reqs: Sequence[str]) -> list[str]:
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check"]
    cmd += ["--only-binary=:all:", "--implementation", "cp", "--python-version", target.python]
    for tag in platform_tags(target):
        cmd += ["--platform", tag]
    return [*cmd, "-d", str(wheels), "pip", *reqs]


def collect(
    out_wheels: Path,
    target: Target,
    extras: Sequence[str],
    given: Path | None,
    say: Say,
    *,
    vendor_wheels: Sequence[Path] = (),
) -> WheelSet:
    """Fill ``out_wheels`` with every wheel the device's venv needs.

    ``vendor_wheels`` (the bundle's, in ``OUT/vendor``) are given to pip too, so their
    dependencies for the target come with the others; pip's copies of them are dropped.
    """
    partial = out_wheels.with_name(f".{out_wheels.name}.partial")
    _fresh_dir(partial)
    try:
        wheel, build = _project_wheel(partial, given, say)
        dist = requirements.of_wheel(wheel)
        requirements.check_extras(dist, extras)
        reqs = requirements.for_target(dist.requires or [], extras, target)
        download = download_command(partial, target, [*reqs, *map(str, vendor_wheels)])
        say(f"wheels for {target.describe()}, extras [{', '.join(extras)}]")
        _run_pip(download, target, say)
        for vendor in vendor_wheels:  # OUT/vendor holds it
            (partial / vendor.name).unlink(missing_ok=True)
        _replace(partial, out_wheels)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    commands = tuple(tuple(_moved(c, partial, out_wheels)) for c in (*build, download))
    return WheelSet(target, tuple(extras), dist.version, wheel.name, tuple(reqs), commands)


def describe_only(
    out_wheels: Path, target: Target, extras: Sequence[str], vendor_wheels: Sequence[Path] = ()
) -> WheelSet:
    """The commands that would fill ``out_wheels`` (``bundle.json`` lists them)."""
    dist = requirements.installed()
    reqs = requirements.for_target(dist.requires or [], extras, target)
    source = source_checkout()
    build = [project_command(out_wheels, source)] if source is not None else []
    download = download_command(out_wheels, target, [*reqs, *map(str, vendor_wheels)])
    commands = tuple(tuple(c) for c in (*build, download))
    return WheelSet(target, tuple(extras), dist.version, "", tuple(reqs), commands)


def _project_wheel(wheels: Path, given: Path | None, say: Say) -> tuple[Path, list[list[str]]]:
    source = source_checkout()
    if source is not None:
        cmd = project_command(wheels, source)
        say(f"building the project wheel from {source}")
        _run_pip(cmd, None, say)
        return _only_project_wheel(wheels, "the built wheels"), [cmd]
    if given is None:
        raise ProvisionError(
            "no source tree here (this is an installed face-mirror): pass the project wheel "
            "with --from DIR (a folder holding face_mirror-VERSION-py3-none-any.whl)"
        )
    found = _only_project_wheel(given, str(given))
    try:
        shutil.copyfile(found, wheels / found.name)
    except OSError as exc:
        raise OutputError(f"cannot copy {found}: {exc.strerror or exc}") from exc
    say(f"project wheel {found.name} from {given}")
    return wheels / found.name, []


def _only_project_wheel(folder: Path, where: str) -> Path:
    found = sorted(p for p in folder.glob("face_mirror-*.whl") if PROJECT_WHEEL.match(p.name))
    if len(found) > 1:
        # several versions: the one this tool is (its own metadata) is the one to install
        mine = metadata.version(requirements.PROJECT)
        found = [p for p in found if PROJECT_WHEEL.match(p.name).group(1) == mine]  # type: ignore[union-attr]
    if len(found) != 1:
        raise ProvisionError(f"expected one face_mirror-*.whl in {where}, found {len(found)}")
    return found[0]


def _run_pip(cmd: list[str], target: Target | None, say: Say) -> None:
    """Run pip, showing its progress lines; its failure becomes one line naming the package."""
    say("running " + " ".join(cmd[2:5]) + " ...")
    try:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
    except OSError as exc:
        raise ProvisionError(f"cannot run pip: {exc.strerror or exc}") from exc
    lines: list[str] = []
    assert proc.stdout is not None
    for raw in proc.stdout:
        line = raw.rstrip()
        lines.append(line)
        if line.lstrip().startswith(_SHOWN):
            say("  " + line.strip())
    if proc.wait() != 0:
        raise ProvisionError(_pip_failure(cmd, lines, target))


def _pip_failure(cmd: list[str], lines: list[str], target: Target | None) -> str:
    text = "\n".join(lines)
    missing = _NOT_FOUND.search(text)
    if missing and target is not None:
        return f"no wheel of {missing.group(1)} for {target.describe()} (pip download found none)"
    errors = [m.group(1) for line in lines if (m := _ERROR.match(line.strip()))]
    tail = errors[0] if errors else (lines[-1] if lines else "no output")
    return f"{' '.join(cmd[2:4])} failed: {tail}"


def _fresh_dir(path: Path) -> None:
    try:
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    except OSError as exc:
        raise OutputError(f"cannot create {path}: {exc.strerror or exc}") from exc


def _replace(partial: Path, final: Path) -> None:
    old = final.with_name(f".{final.name}.old")
    try:
        shutil.rmtree(old, ignore_errors=True)
        if final.exists():
            final.rename(old)
        partial.rename(final)
    except OSError as exc:
        raise OutputError(f"cannot move the wheels into {final}: {exc.strerror or exc}") from exc
    shutil.rmtree(old, ignore_errors=True)


def _moved(cmd: Sequence[str], partial: Path, final: Path) -> list[str]:
    """The command as it reads for ``OUT/wheels`` (it ran into the partial folder)."""
    return [str(final) if part == str(partial) else part for part in cmd]
