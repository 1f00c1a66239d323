"""Per-face work on two cores: faces alternate between the calling thread and a helper.

Several faces in a frame cost the same work each (landmarks, warp, blend).
The model runtimes and OpenCV release the GIL, so a second thread really
runs in parallel; ``map`` hands every other face to it and does the rest
itself. One face costs no hand-off at all. ``fn`` gets the worker number
(0: the calling thread, 1: the helper) to pick per-thread resources, such as
its own model interpreter: an interpreter must not run twice at once.
A process held to one CPU (``mirror bench --cores 1``, a one-core device)
gains nothing from the helper, only thread switches: there faces run in turn.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

logger = logging.getLogger(__name__)

In = TypeVar("In")
Out = TypeVar("Out")

WORKERS = 2


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

    def map(self, fn: Callable[[int, In], Out], items: Sequence[In]) -> list[Out]:
        if len(items) < 2 or not self.parallel:
            return [fn(0, item) for item in items]
        helper = self._executor()
        theirs: list[Future[list[Out]]] = [
            helper.submit(lambda: [fn(1, item) for item in items[1::2]])
        ]
        mine = [fn(0, item) for item in items[0::2]]
        others = theirs[0].result()
        out: list[Out] = []
        for i in range(len(items)):
            out.append(mine[i // 2] if i % 2 == 0 else others[i // 2])
        return out

    def close(self) -> None:
        helper, self._helper = self._helper, None
        if helper is not None:
            helper.shutdown(wait=True)

    def _executor(self) -> ThreadPoolExecutor:
        if self._helper is None:
            self._helper = ThreadPoolExecutor(max_workers=WORKERS - 1, thread_name_prefix="faces")
        return self._helper
