"""Run commands in (or beside) a root with /proc, /sys and /dev mounted, in a private namespace.

Each run gets its own mount namespace (``unshare --mount``, propagation
private): the mounts exist only for that process and vanish with it, so
nothing is left mounted under the root, not even when a run is killed, and
the root can be deleted right after. ``in_root`` runs a program of the
root through ``chroot``; ``beside_root`` runs a host program (e.g. ``mirror
provision``, which itself chroots into the root) with the same mounts.
Both can show a file of the host as the root's ``/proc/cpuinfo`` (the faked
Pi's: see :mod:`tests.arm64.devicetree` for why).
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.arm64.host import SEARCH_PATH

logger = logging.getLogger(__name__)

MOUNT_THEN_EXEC = """set -e
root=$1; cpuinfo=$2; shift 2
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
if [ -n "$cpuinfo" ]; then mount --bind "$cpuinfo" "$root/proc/cpuinfo"; fi
exec "$@"
"""

# The CPU qemu-user emulates: the Raspberry Pi 4's. Its default ("max") offers SVE, which
# LiteRT's XNNPACK then uses: a photo's swap took 248 s emulated instead of 19 s.
EMULATED_CPU = {"QEMU_CPU": "cortex-a72"}
# What a program in the root sees: no host variables leak in (no host venv, no host data dir).
ROOT_ENV = {"PATH": SEARCH_PATH, "LANG": "C.UTF-8", "HOME": "/root", **EMULATED_CPU}


def _mounted(root: Path, argv: Sequence[str], cpuinfo: Path | None) -> list[str]:
    namespace = ["unshare", "--mount", "--propagation", "private", "--"]
    shown = str(cpuinfo) if cpuinfo is not None else ""
    return [*namespace, "sh", "-c", MOUNT_THEN_EXEC, "sh", str(root), shown, *argv]


def in_root(
    root: Path,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cpuinfo: Path | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """``chroot ROOT argv...`` with a clean environment (plus ``env``); output captured."""
    cmd = _mounted(root, ["chroot", str(root), *argv], cpuinfo)
    logger.info("in %s: %s", root, " ".join(argv))
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env={**ROOT_ENV, **(env or {})},
        timeout=timeout,
        check=False,
    )


def beside_root(
    root: Path,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cpuinfo: Path | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """A host program run while ``root`` has /proc, /sys and /dev mounted; output captured."""
    logger.info("beside %s: %s", root, " ".join(argv))
    return subprocess.run(
        _mounted(root, argv, cpuinfo),
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": SEARCH_PATH, **EMULATED_CPU, **(env or {})},
        timeout=timeout,
        check=False,
    )


def mounts_under(root: Path) -> list[str]:
    """Mount points under ``root`` in this namespace (none are expected: see above)."""
    prefix = str(root.resolve()).rstrip("/") + "/"
    points = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        point = line.split()[1].replace("\\040", " ")
        if point.startswith(prefix):
            points.append(point)
    return points
