"""Build this checkout's wheel for the tests that install it (no network, no build isolation),
and whether the package index answers, for the tests that download wheels."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]


def build_wheel(dist: Path) -> Path:
    """``pip wheel`` the project into ``dist``; returns the wheel's path."""
    cmd = [*PIP, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(REPO)]
    built = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("face_mirror-*.whl")
    return wheel


def index_reachable() -> bool:
    """Whether the Python package index answers (the tests that download wheels skip if not)."""
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError:
        return False
    return True
