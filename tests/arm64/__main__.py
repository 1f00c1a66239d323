"""``python -m tests.arm64 [PYTEST_ARGS...]``: the arm64 install test (``make arm64-test``).

1. Installs Debian's mmdebstrap, arch-test, qemu-user-static and binfmt-support when
   missing and this runs as root (output in ``test-output/apt-arm64.log``);
   otherwise it says why the test will skip and goes on.
2. Mounts binfmt_misc and enables the qemu-aarch64 handler when the kernel
   allows; otherwise it says why.
3. Builds the roots not yet cached, all at once (each emulated dpkg run
   uses one core), so that the test finds them cached.
4. Runs ``tests/test_arm64_install.py`` with pytest (which skips with the
   same reason when it cannot run) and exits with pytest's status.
"""

from __future__ import annotations

import logging
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.arm64.host import PACKAGES, install_packages, missing_packages, readiness
from tests.arm64.roots import ensure_root
from tests.arm64.suites import SUITES, Suite
from tests.arm64.timings import Timings

logger = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parent.parent.parent
APT_LOG = REPO / "test-output" / "apt-arm64.log"
TIMINGS_LOG = REPO / "test-output" / "arm64-timings.txt"
TEST = REPO / "tests" / "test_arm64_install.py"


def _say(message: str) -> None:
    print(f"arm64-test: {message}", flush=True)


def prepare() -> bool:
    """Host tools and binfmt, each shortfall said once (the test then skips with it)."""
    missing = missing_packages()
    if missing:
        _say(f"installing {' '.join(missing)} with apt-get (log: {APT_LOG})")
        failed = install_packages(missing, APT_LOG)
        if failed is not None:
            _say(f"{failed}: the arm64 install test will skip (needs {' '.join(PACKAGES)})")
            return False
    reason = readiness()
    if reason is not None:
        _say(f"{reason}: the arm64 install test will skip")
        return False
    return True


def _timed_root(suite: Suite, timings: Timings) -> str | None:
    start = time.monotonic()
    _path, hit, error = ensure_root(suite)
    if not hit:
        timings.add(suite.codename, "root built by mmdebstrap", time.monotonic() - start)
    return error


def build_roots(timings: Timings) -> None:
    """The roots not cached yet, built side by side; a failure is the test's to report."""
    with ThreadPoolExecutor(max_workers=len(SUITES)) as pool:
        errors = list(pool.map(lambda suite: _timed_root(suite, timings), SUITES))
    for error in errors:
        if error is not None:
            _say(error)


def main(argv: list[str]) -> int:
    TIMINGS_LOG.unlink(missing_ok=True)
    if prepare():
        build_roots(Timings(log=TIMINGS_LOG))
    args = [str(TEST), "-m", "arm64", "-s", "-q", "-rs", "-p", "no:cacheprovider", *argv]
    status = int(pytest.main(args))
    if TIMINGS_LOG.is_file():
        _say("timings:\n" + TIMINGS_LOG.read_text().rstrip())
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
