"""The build says what it is doing: ``[3/8] installing the mirror from the bundle``.

Each step's line goes to stderr when it starts, with its time when it ends; a
long tool's own output goes to a log file beside the image, named in the line.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

logger = logging.getLogger(__name__)

Say = Callable[[str], None]


def say_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Steps:
    def __init__(self, total: int, say: Say = say_stderr) -> None:
        self.total = total
        self.done = 0
        self.say = say
        self.started = time.monotonic()
        self.timings: dict[str, float] = {}

    @contextmanager
    def step(self, what: str) -> Iterator[None]:
        self.done += 1
        self.say(f"[{self.done}/{self.total}] {what}")
        began = time.monotonic()
        yield
        took = time.monotonic() - began
        self.timings[what] = round(took, 1)
        self.say(f"[{self.done}/{self.total}] done in {took:.0f} s")
