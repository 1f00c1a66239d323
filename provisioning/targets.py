"""The platform a bundle's wheels are for: a named target, a platform tag, or this machine.

pip does not widen one ``--platform`` to the older tags a glibc also runs
(ai-edge-litert ships only ``manylinux_2_27_aarch64`` wheels while numpy needs
newer ones), so :func:`platform_tags` lists every tag the target's glibc
accepts, newest first, the way ``packaging.tags`` does for the running machine.
"""

from __future__ import annotations

import logging
import platform
import re
import sys
from dataclasses import dataclass
from typing import Any

from provisioning.errors import ProvisionError

logger = logging.getLogger(__name__)

ARCHES = ("aarch64", "x86_64")
# The oldest glibc a manylinux tag names: 2.17 (manylinux2014) for aarch64; x86_64 wheels
# go back to manylinux1 (2.5) and manylinux2010 (2.12).
OLDEST_GLIBC = {"aarch64": 17, "x86_64": 5}
LEGACY_TAGS = {"manylinux2014": 17, "manylinux2010": 12, "manylinux1": 5}


@dataclass(frozen=True)
class Target:
    """Python ``X.Y``, glibc ``2.N`` and the CPU; ``name`` is the table's (or a description)."""

    name: str
    python: str
    glibc: tuple[int, int]
    arch: str
    kernel: str = ""  # a kernel release like the device's (platform_release in markers)

    @property
    def python_tuple(self) -> tuple[int, int]:
        major, minor = self.python.split(".")
        return int(major), int(minor)

    def describe(self) -> str:
        return f"{self.name} (CPython {self.python}, glibc {self.glibc_text}, {self.arch})"

    @property
    def glibc_text(self) -> str:
        return f"{self.glibc[0]}.{self.glibc[1]}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "python": self.python,
            "glibc": self.glibc_text,
            "arch": self.arch,
            "kernel": self.kernel,
            "platforms": platform_tags(self),
        }


TARGETS: dict[str, Target] = {
    # Raspberry Pi OS bookworm is Debian 12: the same Python and glibc.
    "debian12-arm64": Target("debian12-arm64", "3.11", (2, 36), "aarch64"),
    "debian13-arm64": Target("debian13-arm64", "3.13", (2, 41), "aarch64"),
    # JetPack 6 is Ubuntu 22.04 with NVIDIA's L4T kernel (release ends in -tegra).
    "jetpack6": Target("jetpack6", "3.10", (2, 35), "aarch64", "5.15.148-tegra"),
    "debian12-amd64": Target("debian12-amd64", "3.11", (2, 36), "x86_64"),
    "debian13-amd64": Target("debian13-amd64", "3.13", (2, 41), "x86_64"),
    "ubuntu2204-amd64": Target("ubuntu2204-amd64", "3.10", (2, 35), "x86_64"),
    "ubuntu2404-amd64": Target("ubuntu2404-amd64", "3.12", (2, 39), "x86_64"),
}

_PYTHON = re.compile(r"^3\.(\d{1,2})$")
_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_(\w+)$")
_LEGACY = re.compile(r"^(manylinux2014|manylinux2010|manylinux1)_(\w+)$")


def platform_tags(target: Target) -> list[str]:
    """Every platform tag a wheel may carry to run on ``target``, newest first."""
    arch = target.arch
    major, newest = target.glibc
    tags = [
        f"manylinux_{major}_{minor}_{arch}" for minor in range(newest, OLDEST_GLIBC[arch] - 1, -1)
    ]
    for legacy, minor in LEGACY_TAGS.items():
        if minor <= newest and (arch == "x86_64" or legacy == "manylinux2014"):
            tags.append(f"{legacy}_{arch}")
    return [*tags, f"linux_{arch}"]


def named(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        known = ", ".join(sorted(TARGETS))
        raise ProvisionError(f"unknown target {name!r} (known: {known})") from None


def from_platform(tag: str, python: str | None) -> Target:
    """``--platform manylinux_2_36_aarch64 --python 3.11`` (or ``manylinux2014_ARCH``)."""
    if python is None or not _PYTHON.match(python):
        raise ProvisionError(f"--platform {tag} needs --python 3.N (the device's Python)")
    found = _MANYLINUX.match(tag)
    if found:
        glibc, arch = (int(found.group(1)), int(found.group(2))), found.group(3)
    elif legacy := _LEGACY.match(tag):
        glibc, arch = (2, LEGACY_TAGS[legacy.group(1)]), legacy.group(2)
    else:
        raise ProvisionError(
            f"--platform {tag}: expected manylinux_2_N_ARCH or manylinux2014_ARCH "
            "(or use --target NAME)"
        )
    if arch not in ARCHES:
        raise ProvisionError(f"--platform {tag}: unsupported CPU {arch} ({', '.join(ARCHES)})")
    return Target(tag, python, glibc, arch)


def this_machine() -> Target:
    """The Python and platform running this command."""
    arch = platform.machine()
    if arch not in ARCHES:
        raise ProvisionError(f"this machine's CPU {arch} is not one of {', '.join(ARCHES)}")
    libc, version = platform.libc_ver()
    parts = version.split(".")
    if libc != "glibc" or len(parts) < 2:
        raise ProvisionError("this machine's C library is not glibc: name a --target")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    glibc = (int(parts[0]), int(parts[1]))
    return Target("this-machine", python, glibc, arch, platform.release())


def choose(name: str | None, tag: str | None, python: str | None) -> Target:
    """The one target the installer named (or this machine when none is)."""
    if name is not None and tag is not None:
        raise ProvisionError("name the target once: --target NAME or --platform TAG --python X.Y")
    if name is not None:
        return named(name)
    if tag is not None:
        return from_platform(tag, python)
    if python is not None:
        raise ProvisionError("--python goes with --platform TAG (or use --target NAME)")
    return this_machine()


def from_json(data: Any) -> Target:
    """The target a bundle records (see :meth:`Target.to_json`)."""
    try:
        major, minor = str(data["glibc"]).split(".")
        return Target(
            str(data["name"]),
            str(data["python"]),
            (int(major), int(minor)),
            str(data["arch"]),
            str(data.get("kernel", "")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ProvisionError(f"the bundle's target record is unreadable: {exc}") from exc
