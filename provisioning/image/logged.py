"""Run one of the build's tools with its output appended to the build log, under a time limit."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from provisioning.errors import ImageError

logger = logging.getLogger(__name__)


def run_logged(
    what: str,
    cmd: Sequence[str],
    log: Path,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run ``cmd``; ImageError names ``what`` and the log when it overruns or fails."""
    with log.open("a") as out:
        try:
            done = subprocess.run(
                list(cmd),
                stdout=out,
                stderr=subprocess.STDOUT,
                env=None if env is None else dict(env),
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ImageError(f"{what} ran over {timeout_s:g} s (log: {log})") from exc
    if done.returncode != 0:
        raise ImageError(f"{what} failed with status {done.returncode} (log: {log})")
