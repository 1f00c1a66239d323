"""Per-face work on two cores: faces in pairs on the calling thread and a helper.

Several faces in a frame cost the same work each (landmarks, warp, blend).
The model runtimes and OpenCV release the GIL, so a second thread really
runs in parallel; ``map`` runs faces two at a time, one on the calling
thread and one on the helper, and an odd one out on its own afterwards.
``fn`` gets the worker number to pick per-thread resources, such as its own
model interpreter (an interpreter must not run twice at once):

- ``ALONE`` (0): nothing else of the pool runs meanwhile, so the work may use
  every core (a landmark interpreter with two threads: 3.7 ms instead of 7.9);
- ``CALLER`` (1) and ``HELPER`` (2): the two halves of a pair, one core each.

A process held to one CPU (``mirror bench --cores 1``, a one-core device)
gains nothing from the helper, only thread switches: there faces run in turn,
each as ``CALLER``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

logger = logging.getLogger(__name__)

In = TypeVar("In")
Out = TypeVar("Out")

ALONE = 0
CALLER = 1
HELPER = 2


def usable_cpus() -> int:
    """How many CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class FacePool:
    """Runs ``fn(worker, item)`` over items on up to two threads; results in order."""

    def __init__(self, parallel: bool = True) -> None:
        self.parallel = parallel and usable_cpus() > 1
        self._helper: ThreadPoolExecutor | None = None

    @property
    def width(self) -> int:
        """How many faces run at once: 2 on the caller and the helper, 1 in turn."""
        return 2 if self.parallel else 1

    def map(self, fn: Callable[[int, In], Out], items: Sequence[In]) -> list[Out]:
        if not self.parallel:
            return [fn(CALLER, item) for item in items]
        out: list[Out] = []
        paired = len(items) - len(items) % 2
        for i in range(0, paired, 2):
            theirs = self._executor().submit(fn, HELPER, items[i + 1])
            out.append(fn(CALLER, items[i]))
            out.append(theirs.result())
        if paired < len(items):
            out.append(fn(ALONE, items[-1]))
        return out

    def close(self) -> None:
        helper, self._helper = self._helper, None
        if helper is not None:
            helper.shutdown(wait=True)

    def _executor(self) -> ThreadPoolExecutor:
        if self._helper is None:
            self._helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="faces")
        return self._helper
