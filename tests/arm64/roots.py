"""Debian arm64 roots built by mmdebstrap, cached as tarballs, extracted fresh for each run.

The cache (``$MIRROR_ARM64_CACHE`` or ``~/.cache/face-mirror/arm64``) holds one
tarball per suite, architecture, variant and package list (the key is in the
name), so a changed package list builds a new root and the old one is
removed. A build writes a ``.partial`` file and renames it when complete; a
lock file keeps two runs from building the same root at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.arm64.chroot import EMULATED_CPU
from tests.arm64.host import SEARCH_PATH
from tests.arm64.suites import Suite

logger = logging.getLogger(__name__)

CACHE_ENV = "MIRROR_ARM64_CACHE"
# Bump to rebuild every cached root (e.g. when the mmdebstrap options below change).
LAYOUT_VERSION = 1
BUILD_TIMEOUT_S = 1800
EXTRACT_TIMEOUT_S = 300


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "face-mirror" / "arm64"


def cache_key(suite: Suite) -> str:
    spec = {
        "layout": LAYOUT_VERSION,
        "suite": suite.codename,
        "arch": suite.arch,
        "variant": suite.variant,
        "packages": sorted(suite.packages),
        "excluded": sorted(suite.excluded),
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def tarball(suite: Suite) -> Path:
    return cache_root() / f"{suite.codename}-{suite.arch}-{cache_key(suite)}.tar"


def mmdebstrap_command(suite: Suite, out: Path) -> list[str]:
    return [
        "mmdebstrap",
        "--mode=root",
        "--format=tar",
        f"--arch={suite.arch}",
        f"--variant={suite.variant}",
        f"--include={','.join(suite.packages)}",
        *(f"--dpkgopt=path-exclude={pattern}" for pattern in suite.excluded),
        suite.codename,
        str(out),
    ]


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def cached_root(suite: Suite) -> tuple[Path, bool]:
    """The root's tarball, built now when it is not cached; and whether it was cached."""
    path, hit, error = ensure_root(suite)
    if error is not None:
        pytest.fail(error)
    return path, hit


def ensure_root(suite: Suite) -> tuple[Path, bool, str | None]:
    """The root's tarball, whether it was cached, and why it could not be built (or None)."""
    path = tarball(suite)
    path.parent.mkdir(parents=True, exist_ok=True)
    with (path.parent / f"{path.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run building it: wait, then reuse it
        if path.is_file():
            return path, True, None
        error = _build(suite, path)
        if error is None:
            _drop_stale(suite, path)
        return path, False, error


def _drop_stale(suite: Suite, current: Path) -> None:
    """The suite's roots built for an older key (package list, options): never used again."""
    for old in current.parent.glob(f"{suite.codename}-{suite.arch}-*.tar"):
        if old != current:
            logger.info("removing the stale root %s", old)
            for leftover in (old, *(old.with_name(old.name + end) for end in (".log", ".lock"))):
                leftover.unlink(missing_ok=True)


def _build(suite: Suite, path: Path) -> str | None:
    partial = path.with_name(path.name + ".partial")
    log = path.with_name(path.name + ".log")
    partial.unlink(missing_ok=True)
    cmd = mmdebstrap_command(suite, partial)
    logger.info("building %s: %s", path.name, " ".join(cmd))
    # dpkg and the maintainer scripts run emulated: on a Cortex-A72, not qemu's default SVE
    # CPU, on which Debian 13's glibc string functions run many times slower
    env = {**os.environ, "PATH": SEARCH_PATH, **EMULATED_CPU}
    with log.open("w") as out:
        # Its own session, so a timeout stops all of it (its workers too), not just the parent.
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        try:
            returncode = proc.wait(timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)  # mmdebstrap removes its temporary root
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            partial.unlink(missing_ok=True)
            return f"mmdebstrap {suite.codename} ran over {BUILD_TIMEOUT_S} s (log: {log})"
    if returncode != 0:
        partial.unlink(missing_ok=True)
        return f"mmdebstrap {suite.codename} failed (log: {log}):\n{_tail(log)}"
    partial.rename(path)
    return None


def extract(tar: Path, dest: Path) -> None:
    """A fresh copy of the cached root in ``dest`` (owners, modes and device nodes kept)."""
    dest.mkdir(parents=True, exist_ok=True)
    cmd = ["tar", "--extract", "--numeric-owner", "--same-permissions", "-f", str(tar)]
    done = subprocess.run(
        [*cmd, "-C", str(dest)],
        capture_output=True,
        text=True,
        timeout=EXTRACT_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"cannot extract {tar}: {done.stderr.strip()[-500:]}")
