"""Wall-clock time of each phase, printed as it ends and kept for the summary."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)


@dataclass
class Timings:
    rows: list[tuple[str, str, float]] = field(default_factory=list)
    log: Path | None = None

    @contextmanager
    def phase(self, suite: str, name: str) -> Iterator[list[str]]:
        """Time the block; the block may append a note (e.g. "cache hit") to the list it gets."""
        notes: list[str] = []
        start = time.monotonic()
        try:
            yield notes
        finally:
            label = name + (f" ({', '.join(notes)})" if notes else "")
            self.add(suite, label, time.monotonic() - start)

    def add(self, suite: str, label: str, seconds: float) -> None:
        self.rows.append((suite, label, seconds))
        line = f"arm64 timing: {suite:<9} {label:<40} {seconds:7.1f} s"
        print(line, file=sys.stderr, flush=True)
        if self.log is not None:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with self.log.open("a") as out:
                out.write(line + "\n")
