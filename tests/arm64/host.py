"""The host side: root, Debian's tools (mmdebstrap, arch-test, qemu-user-static,
binfmt-support), binfmt.

Every check returns the reason the arm64 tests cannot run (a skip reason), or
None when they can; nothing here raises for an expected shortfall.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

logger = logging.getLogger(__name__)

# The program each Debian package brings, and where it is looked for.
TOOLS = {
    "mmdebstrap": "mmdebstrap",
    # mmdebstrap's check that the foreign architecture runs (only Recommended by it, so an
    # install without recommends lacks it: "install arch-test for foreign architecture
    # support", and no root is built)
    "arch-test": "arch-test",
    "qemu-aarch64-static": "qemu-user-static",
    "update-binfmts": "binfmt-support",
}
PACKAGES = tuple(dict.fromkeys(TOOLS.values()))
SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BINFMT_DIR = Path("/proc/sys/fs/binfmt_misc")
HANDLER = "qemu-aarch64"
APT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "PATH": SEARCH_PATH}


def is_root() -> bool:
    return os.geteuid() == 0


def missing_packages() -> list[str]:
    """The Debian packages whose program is not installed."""
    found = [pkg for tool, pkg in TOOLS.items() if shutil.which(tool, path=SEARCH_PATH) is None]
    return list(dict.fromkeys(found))


def install_packages(packages: list[str], log: Path) -> str | None:
    """``apt-get install`` them as root (output in ``log``); the reason when it cannot."""
    if not packages:
        return None
    if shutil.which("apt-get", path=SEARCH_PATH) is None:
        return f"no apt-get here to install {' '.join(packages)}"
    if not is_root():
        return f"not root: cannot apt-get install {' '.join(packages)}"
    log.parent.mkdir(parents=True, exist_ok=True)
    steps = (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages],
    )
    with log.open("w") as out:
        for cmd in steps:
            env = {**os.environ, **APT_ENV}
            done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, check=False)
            if done.returncode != 0:
                return f"`{' '.join(cmd)}` failed (exit {done.returncode}; log: {log})"
    return None


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": SEARCH_PATH}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)


def _said(proc: subprocess.CompletedProcess[str]) -> str:
    lines = (proc.stderr or proc.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit status {proc.returncode}"


def handler_state() -> str | None:
    """The registered aarch64 handler's text, or None when there is none."""
    try:
        return (BINFMT_DIR / HANDLER).read_text()
    except OSError:
        return None


def ensure_binfmt() -> str | None:
    """Mount binfmt_misc and enable the aarch64 handler when needed; the reason when it cannot.

    The handler must have the F flag (the emulator opened at registration), so
    that it runs inside a chroot that has no emulator of its own.
    """
    if not is_root():
        return "not root: the arm64 roots need root (mmdebstrap, chroot, mounts)"
    if not (BINFMT_DIR / "register").exists():
        proc = _run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT_DIR)])
        if proc.returncode != 0:
            return f"the kernel does not let binfmt_misc be mounted here: {_said(proc)}"
    if handler_state() is None:
        if shutil.which("update-binfmts", path=SEARCH_PATH) is None:
            return "no update-binfmts (apt-get install binfmt-support qemu-user-static)"
        proc = _run(["update-binfmts", "--enable", HANDLER])
        if proc.returncode != 0 or handler_state() is None:
            return f"cannot register the {HANDLER} binfmt handler: {_said(proc)}"
    return handler_problem(handler_state() or "")


def handler_problem(state: str) -> str | None:
    """What is wrong with the registered handler (its binfmt_misc text), or None."""
    if not state.startswith("enabled"):
        return f"the {HANDLER} binfmt handler is registered but disabled"
    flags = next((ln.split(":", 1)[1] for ln in state.splitlines() if ln.startswith("flags:")), "")
    if "F" not in flags:
        return f"the {HANDLER} handler lacks the F flag ({flags.strip()}): no emulator in a chroot"
    return None


def readiness() -> str | None:
    """Why the arm64 tests cannot run on this host, or None when they can."""
    if not is_root():
        return "not root: the arm64 roots need root (mmdebstrap, chroot, mounts)"
    missing = missing_packages()
    if missing:
        return f"missing {' '.join(missing)} (`make arm64-test` installs them as root)"
    if shutil.which("unshare", path=SEARCH_PATH) is None:
        return "no unshare (util-linux) for the chroot's private mounts"
    return ensure_binfmt()
