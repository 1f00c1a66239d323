"""How provisioning runs a program: injectable, so tests can record what a live system would run.

A runner gets the argv and the environment and returns the exit status and the
output (stdout and stderr together). :func:`run_subprocess` is the real one;
a test passes a recording runner instead.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunResult:
    returncode: int
    output: str

    def last_line(self) -> str:
        lines = [line for line in self.output.strip().splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("ERROR:")]
        return (errors or lines or ["no output"])[-1].strip()


class Runner(Protocol):
    def __call__(self, argv: Sequence[str], env: Mapping[str, str]) -> RunResult: ...


def run_subprocess(argv: Sequence[str], env: Mapping[str, str]) -> RunResult:
    logger.info("running %s", " ".join(argv))
    try:
        proc = subprocess.run(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=dict(env),
            check=False,
        )
    except OSError as exc:
        return RunResult(127, f"cannot run {argv[0]}: {exc.strerror or exc}")
    return RunResult(proc.returncode, proc.stdout)
