"""The project's dependencies for a target and a set of extras, from its distribution metadata.

pip evaluates environment markers against the Python running it, not against
``--python-version``/``--platform``; so the markers of the project's own
requirements (``numpy<2; python_version < '3.12'`` in the ``pi`` extra, no
opencv on a Jetson's ``-tegra`` kernel) are evaluated here, for the target,
with :mod:`packaging.markers`, and pip gets plain requirements.

The metadata is the project wheel's when there is one (exactly what pip on the
device resolves), else the installed distribution's (``importlib.metadata``):
never ``pyproject.toml``, which an installed wheel does not have.
"""

from __future__ import annotations

import logging
import os
import zipfile
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement

from provisioning.errors import ProvisionError
from provisioning.targets import Target

logger = logging.getLogger(__name__)

PROJECT = "face-mirror"


def marker_environment(target: Target, extra: str = "") -> dict[str, str]:
    """The values markers see on the target device."""
    env: dict[str, str] = {key: str(value) for key, value in default_environment().items()}
    env.update(
        python_version=target.python,
        python_full_version=f"{target.python}.0",
        implementation_name="cpython",
        implementation_version=f"{target.python}.0",
        platform_python_implementation="CPython",
        platform_machine=target.arch,
        platform_system="Linux",
        sys_platform="linux",
        os_name="posix",
        platform_release=target.kernel,
        platform_version="",
        extra=extra,
    )
    return env


def for_target(requires: Iterable[str], extras: Sequence[str], target: Target) -> list[str]:
    """The requirements (markers dropped) that hold on ``target`` with ``extras``."""
    chosen: list[str] = []
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise ProvisionError(f"{PROJECT} metadata: bad requirement {text!r}: {exc}") from exc
        if req.marker is not None and not any(
            req.marker.evaluate(marker_environment(target, extra)) for extra in ("", *extras)
        ):
            continue
        req.marker = None
        line = str(req)
        if line not in chosen:
            chosen.append(line)
    return chosen


def declared_extras(dist: metadata.Distribution) -> list[str]:
    return list(dist.metadata.get_all("Provides-Extra") or [])


def installed() -> metadata.Distribution:
    try:
        return metadata.distribution(PROJECT)
    except metadata.PackageNotFoundError:
        raise ProvisionError(f"{PROJECT} is not installed here: install it first") from None


class WheelDistribution(metadata.Distribution):
    """A wheel's ``.dist-info`` files, read into memory (the wheel is closed again)."""

    def __init__(self, files: dict[str, str]) -> None:
        self._files = files

    def read_text(self, filename: str) -> str | None:
        return self._files.get(filename)

    def locate_file(self, path: str | os.PathLike[str]) -> Path:
        raise ProvisionError(f"{path}: a wheel's files are not installed anywhere")


def of_wheel(wheel: Path) -> metadata.Distribution:
    """The metadata inside a project wheel, read through ``importlib.metadata``."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            files = {
                name.split("/", 1)[1]: archive.read(name).decode("utf-8")
                for name in archive.namelist()
                if name.count("/") == 1 and name.split("/")[0].endswith(".dist-info")
            }
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise ProvisionError(f"cannot read the project wheel {wheel}: {exc}") from exc
    if "METADATA" not in files:
        raise ProvisionError(f"{wheel} is not a wheel (no .dist-info/METADATA)")
    return WheelDistribution(files)


def check_extras(dist: metadata.Distribution, extras: Sequence[str]) -> list[str]:
    """The extras ``dist`` does not declare (pip ignores those with a warning; so do we)."""
    declared = {e.lower() for e in declared_extras(dist)}
    missing = [e for e in extras if e.lower() not in declared]
    for extra in missing:
        logger.warning("%s %s declares no extra %r", PROJECT, dist.version, extra)
    return missing
