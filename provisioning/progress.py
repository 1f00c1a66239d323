"""A byte-counting progress bar on stderr for verifying and copying the bundle."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

logger = logging.getLogger(__name__)


class ByteProgress:
    """``label [#####-----] 12.3/45.6 MB``: redrawn in place on a terminal, per file otherwise."""

    def __init__(self, total_bytes: int, label: str, stream: TextIO | None = None) -> None:
        self.total = max(total_bytes, 1)
        self.label = label
        self.done = 0
        self.stream = stream or sys.stderr
        self._tty = self.stream.isatty()

    def add(self, count: int, name: str = "") -> None:
        self.done += count
        if self._tty or name:
            self._draw(name)

    def _draw(self, name: str) -> None:
        width = 30
        filled = int(width * min(self.done, self.total) / self.total)
        bar = "#" * filled + "-" * (width - filled)
        text = f"{self.label} [{bar}] {self.done / 1e6:.1f}/{self.total / 1e6:.1f} MB {name}"
        print(text, end="\r" if self._tty else "\n", file=self.stream, flush=True)

    def close(self) -> None:
        if self._tty:
            print(file=self.stream, flush=True)
