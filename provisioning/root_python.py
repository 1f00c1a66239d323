"""The Python of the root being provisioned: its version, its CPU and its glibc.

Read from the files, never by running them: the version from the name
``/usr/bin/python3`` resolves to (``python3.11``) inside the root, the CPU
from that file's ELF header, glibc from the banner of the root's
``libc.so.6``. A bundle's wheels are made for one target; :func:`check_bundle`
refuses a bundle whose target does not run on this root.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from provisioning.errors import ProvisionError
from provisioning.targets import Target

logger = logging.getLogger(__name__)

ROOT_PYTHON = PurePosixPath("/usr/bin/python3")
ELF_MACHINES = {0x3E: "x86_64", 0xB7: "aarch64", 0x28: "armv7l"}
_VERSIONED = re.compile(r"^python(3\.\d{1,2})$")
_GLIBC = re.compile(rb"release version (\d+)\.(\d+)")
LIBC_GLOBS = ("lib/*-linux-gnu/libc.so.6", "usr/lib/*-linux-gnu/libc.so.6", "lib64/libc.so.6")


@dataclass(frozen=True)
class RootPython:
    where: str  # for messages: "ROOT/usr/bin/python3" or the interpreter given
    version: str  # "3.11"
    arch: str
    glibc: tuple[int, int] | None  # None: not found (then not checked)

    def describe(self) -> str:
        libc = f"glibc {self.glibc[0]}.{self.glibc[1]}" if self.glibc else "glibc unknown"
        return f"{self.where}: CPython {self.version}, {libc}, {self.arch}"


def resolve_in_root(root: Path, device_path: PurePosixPath, hops: int = 16) -> Path:
    """Follow symlinks as the root sees them (an absolute link stays inside ``root``)."""
    current = PurePosixPath(device_path)
    for _ in range(hops):
        host = root / str(current).lstrip("/")
        if not host.is_symlink():
            return host
        link = PurePosixPath(os.readlink(host))
        current = link if link.is_absolute() else current.parent / link
    raise ProvisionError(f"{root / str(device_path).lstrip('/')}: too many symbolic links")


def elf_arch(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            head = handle.read(20)
    except OSError as exc:
        raise ProvisionError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if len(head) < 20 or head[:4] != b"\x7fELF":
        raise ProvisionError(f"{path} is not an ELF executable")
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    return ELF_MACHINES.get(machine, f"ELF machine {machine:#x}")


def glibc_of(libc: Path) -> tuple[int, int] | None:
    try:
        found = _GLIBC.search(libc.read_bytes())
    except OSError:
        return None
    return (int(found.group(1)), int(found.group(2))) if found else None


def probe_root(root: Path) -> RootPython:
    """The root's ``/usr/bin/python3``; raises when the root has none."""
    shown = root / str(ROOT_PYTHON).lstrip("/")
    if not shown.exists():
        raise ProvisionError(
            f"{shown} is missing: the root needs Debian's python3 for the device's venv"
        )
    real = resolve_in_root(root, ROOT_PYTHON)
    version = _version_from_name(real.name) or _version_from_stdlib(root)
    if version is None:
        raise ProvisionError(f"cannot tell the Python version of {shown} (-> {real.name})")
    libcs = [p for pattern in LIBC_GLOBS for p in sorted(root.glob(pattern))]
    glibc = glibc_of(libcs[0]) if libcs else None
    return RootPython(str(shown), version, elf_arch(real), glibc)


def probe_host(python: Path) -> RootPython:
    """This machine's interpreter ``python`` (staging a venv at host paths, e.g. tests)."""
    real = Path(python).resolve()
    version = _version_from_name(real.name)
    if version is None:
        raise ProvisionError(f"cannot tell the Python version of {python} (-> {real.name})")
    libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    parts = libc.removeprefix("glibc ").split(".")
    glibc = (int(parts[0]), int(parts[1])) if libc.startswith("glibc ") else None
    return RootPython(str(python), version, elf_arch(real), glibc)


def check_bundle(target: Target, python: RootPython) -> None:
    """Refuse wheels made for another CPU, another Python or a newer glibc."""
    rebuild = "build the bundle for it (mirror provision bundle --target NAME)"
    if target.arch != python.arch:
        raise ProvisionError(
            f"the bundle's wheels are for {target.describe()}, but {python.describe()}: {rebuild}"
        )
    if target.python != python.version:
        raise ProvisionError(
            f"the bundle's wheels are for {target.describe()}, but {python.describe()}: {rebuild}"
        )
    if python.glibc is not None and python.glibc < target.glibc:
        raise ProvisionError(
            f"the bundle's wheels need glibc {target.glibc_text} ({target.describe()}), but "
            f"{python.describe()}: {rebuild}"
        )


def _version_from_name(name: str) -> str | None:
    found = _VERSIONED.match(name)
    return found.group(1) if found else None


def _version_from_stdlib(root: Path) -> str | None:
    """``/usr/lib/python3.N/os.py``: the one standard library of the root."""
    found = sorted(p.parent.name for p in root.glob("usr/lib/python3.*/os.py"))
    return found[0].removeprefix("python") if len(found) == 1 else None
