"""``python -m tests.arm64 [PYTEST_ARGS...]``: the arm64 install test (``make arm64-test``).

1. Installs Debian's mmdebstrap, qemu-user-static and binfmt-support when
   missing and this runs as root (output in ``test-output/apt-arm64.log``);
   otherwise it says why the test will skip and goes on.
2. Mounts binfmt_misc and enables the qemu-aarch64 handler when the kernel
   allows; otherwise it says why.
3. Runs ``tests/test_arm64_install.py`` with pytest (which skips with the
   same reason when it cannot run) and exits with pytest's status.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from tests.arm64.host import PACKAGES, ensure_binfmt, install_packages, missing_packages

logger = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parent.parent.parent
APT_LOG = REPO / "test-output" / "apt-arm64.log"
TIMINGS_LOG = REPO / "test-output" / "arm64-timings.txt"
TEST = REPO / "tests" / "test_arm64_install.py"


def _say(message: str) -> None:
    print(f"arm64-test: {message}", flush=True)


def prepare() -> None:
    """Host tools and binfmt, each shortfall said once (the test then skips with it)."""
    missing = missing_packages()
    if missing:
        _say(f"installing {' '.join(missing)} with apt-get (log: {APT_LOG})")
        failed = install_packages(missing, APT_LOG)
        if failed is not None:
            _say(f"{failed}: the arm64 install test will skip (needs {' '.join(PACKAGES)})")
            return
    reason = ensure_binfmt()
    if reason is not None:
        _say(f"{reason}: the arm64 install test will skip")


def main(argv: list[str]) -> int:
    prepare()
    TIMINGS_LOG.unlink(missing_ok=True)
    args = [str(TEST), "-m", "arm64", "-s", "-q", "-rs", "-p", "no:cacheprovider", *argv]
    status = int(pytest.main(args))
    if TIMINGS_LOG.is_file():
        _say("timings:\n" + TIMINGS_LOG.read_text().rstrip())
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
