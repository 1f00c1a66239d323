"""Keeping a multi-threaded interpreter's worker threads off its caller's CPU.

A LiteRT interpreter with ``num_threads=2`` starts one worker thread (in
``allocate_tensors``); each ``invoke`` splits every operator between the
caller and the worker. That halves the landmark model only if the two run
on different CPUs. A scheduler that packs lightly loaded tasks onto few
CPUs (energy-aware scheduling on ARM big.LITTLE boards, the vCPU packing of
the 2-vCPU development guest) wakes the worker on the caller's own CPU
whenever the mirror is not busy, which at 30 fps it mostly is not: there
the one-face landmark model took 4.5-4.6 ms a frame, against 2.6-2.8 ms
with the worker held to the other CPU, and 5.9 ms with both held to one
(the caller paced at 30 fps, nothing else running; 1.8 ms back to back).

So before each run the worker threads are allowed every CPU that the
process (its main thread) or the caller may use except the one the caller
is on (when that changed since the last run: one ``sched_getcpu`` call per
run, a ``sched_setaffinity`` per worker only on a change). The caller
itself stays free. Where there is no other CPU (a process held to one) the
workers stay on that one; where the platform cannot tell (no
``sched_getcpu``, no ``/proc``) nothing is done. (``mirror bench --cores
N`` holds every thread, the main one included, to N CPUs: the workers
stay among them.)
"""

from __future__ import annotations

import ctypes
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

logger = logging.getLogger(__name__)

TASKS = Path("/proc/self/task")
T = TypeVar("T")


def _getcpu() -> Callable[[], int] | None:
    """libc's ``sched_getcpu`` (a vDSO call, well under a microsecond), or None."""
    try:
        function = ctypes.CDLL(None, use_errno=True).sched_getcpu
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_int
    function.argtypes = []
    return function


_GETCPU = _getcpu()


def current_cpu() -> int | None:
    """The CPU the calling thread runs on now, or None where that cannot be told."""
    if _GETCPU is None:
        return None
    cpu = _GETCPU()
    return cpu if cpu >= 0 else None


def thread_ids() -> set[int]:
    """The native ids of this process's threads (empty where ``/proc`` is missing)."""
    try:
        return {int(p.name) for p in TASKS.iterdir() if p.name.isdigit()}
    except OSError:
        return set()


def started_by(start: Callable[[], T], expected: int) -> tuple[T, list[int]]:
    """``start()``'s result and the threads it started: those that appeared while it
    ran, when there are exactly ``expected`` of them (another thread may have started
    one meanwhile: then none, rather than a stranger's)."""
    before = thread_ids()
    result = start()
    new = sorted(thread_ids() - before) if before else []
    if len(new) != expected:
        if expected:
            logger.debug("expected %d new threads, saw %d: not spreading", expected, len(new))
        return result, []
    return result, new


class Spread:
    """Holds ``workers`` (native thread ids) off the CPU of whoever calls ``before_run``."""

    def __init__(self, workers: list[int]) -> None:
        self.workers = list(workers) if hasattr(os, "sched_setaffinity") else []
        self._cpu: int | None = None  # the caller's CPU at the last placement

    def before_run(self) -> None:
        """Allow the workers every CPU of the caller's but its current one (on a change)."""
        if not self.workers:
            return
        cpu = current_cpu()
        if cpu is None or cpu == self._cpu:
            return
        self._cpu = cpu
        # the process's CPUs (its main thread's: ``--cores`` holds them all) and the caller's
        allowed = os.sched_getaffinity(os.getpid()) | os.sched_getaffinity(0)
        others = allowed - {cpu} or allowed
        for worker in list(self.workers):
            try:
                os.sched_setaffinity(worker, others)
            except OSError as exc:  # the interpreter was closed and its threads ended
                logger.debug("worker thread %d: %s", worker, exc)
                self.workers.remove(worker)
