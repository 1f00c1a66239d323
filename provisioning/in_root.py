"""Running the root's own programs: directly on the live system, through ``chroot`` for a
mounted root, or (``Layout.host_python``) with this machine's interpreter at host paths.

On a mounted root of another CPU (an arm64 image on an x86 machine) the root's
python runs under qemu-user through binfmt_misc; :func:`chroot_blocker` says
why ``chroot`` cannot work here before anything is written.
"""

from __future__ import annotations

import logging
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from provisioning.errors import ProvisionError
from provisioning.layout import Layout
from provisioning.root_python import ROOT_PYTHON, elf_arch, resolve_in_root

logger = logging.getLogger(__name__)

Mode = Literal["live", "chroot", "host"]
BINFMT = Path("/proc/sys/fs/binfmt_misc")
SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# qemu-user's default CPU ("max") has SVE, which Debian 13's glibc picks for its string
# functions: the root's python then runs about 13 times slower than on a Cortex-A72 (a
# Raspberry Pi 4's CPU, which every arm64 Debian runs on). Measured here: a loop in
# trixie's python 26.5 s on "max", 2.1 s on cortex-a72; bookworm's 1.0 s on either.
EMULATED_CPU = {"aarch64": "cortex-a72"}


@dataclass(frozen=True)
class RootShell:
    mode: Mode
    layout: Layout

    def path(self, device_path: PurePosixPath) -> str:
        """``device_path`` as the command sees it."""
        if self.mode == "host":
            return str(self.layout.host(device_path))
        return str(device_path)

    @property
    def python(self) -> str:
        if self.mode == "host":
            assert self.layout.host_python is not None
            return str(self.layout.host_python)
        return str(ROOT_PYTHON)

    def argv(self, *parts: str) -> tuple[str, ...]:
        if self.mode == "chroot":
            return ("chroot", str(self.layout.root), *parts)
        return parts

    def env(self) -> Mapping[str, str]:
        """A clean environment: nothing of this shell (venv, PYTHONPATH, PIP_*) leaks in.

        Under chroot, the emulator's own settings (``QEMU_*``: they configure qemu-user,
        not the root's programs) are kept, and a foreign root's CPU defaults to one
        that emulates fast (:data:`EMULATED_CPU`).
        """
        home = os.environ.get("HOME", "/root") if self.mode == "host" else "/root"
        env = {"PATH": SEARCH_PATH, "LANG": "C.UTF-8", "HOME": home}
        if self.mode == "chroot":
            env.update({k: v for k, v in os.environ.items() if k.startswith("QEMU_")})
            arch = self._root_arch()
            if arch in EMULATED_CPU and arch != platform.machine():
                env.setdefault("QEMU_CPU", EMULATED_CPU[arch])
        return env

    def _root_arch(self) -> str | None:
        python = resolve_in_root(self.layout.root, ROOT_PYTHON)
        try:
            return elf_arch(python)
        except ProvisionError:
            return None  # no python there yet: nothing to emulate


def shell_for(layout: Layout) -> RootShell:
    if layout.host_python is not None:
        return RootShell("host", layout)
    return RootShell("live" if layout.is_live() else "chroot", layout)


def chroot_blocker(root: Path, root_arch: str) -> str | None:
    """Why ``chroot ROOT python3`` cannot run here, or None."""
    if os.geteuid() != 0:
        return f"running {root}'s python through chroot needs root: run mirror provision as root"
    here = platform.machine()
    if root_arch == here:
        return None
    handler = BINFMT / f"qemu-{root_arch}"
    try:
        enabled = handler.read_text().splitlines()[0].strip() == "enabled"
    except (OSError, IndexError):
        enabled = False
    if not enabled:
        return (
            f"{root}'s python is {root_arch} and this machine is {here} with no binfmt handler "
            f"for it ({handler}): apt-get install qemu-user-static binfmt-support"
        )
    return None
