"""``mirror bench --cores N``: the whole process held to N CPUs (a Raspberry-Pi-class budget).

``os.sched_setaffinity`` pins one thread (pid 0: the caller), and threads
inherit their creator's set, so every task already running is pinned too
(the runtimes' pools start early). OpenCV's own pool is sized to the same
count, or it would split work over CPUs it may not use.
"""

from __future__ import annotations

import logging
import os

import cv2

from appliance.errors import ConfigError
from appliance.inference.spread import thread_ids

logger = logging.getLogger(__name__)


def available_cpus() -> list[int]:
    """The CPUs this process may run on now, in order."""
    if not hasattr(os, "sched_getaffinity"):
        return list(range(os.cpu_count() or 1))
    return sorted(os.sched_getaffinity(0))


def pin_cores(count: int) -> list[int]:
    """Hold this process (every thread) to the first ``count`` allowed CPUs; returns them."""
    cpus = available_cpus()
    if not 1 <= count <= len(cpus):
        raise ConfigError(f"--cores must be between 1 and {len(cpus)} here, got {count}")
    if not hasattr(os, "sched_setaffinity"):
        raise ConfigError("--cores needs os.sched_setaffinity (Linux)")
    chosen = set(cpus[:count])
    os.sched_setaffinity(0, chosen)
    for task in sorted(thread_ids()):
        try:
            os.sched_setaffinity(task, chosen)
        except OSError as exc:  # a thread that ended meanwhile
            logger.debug("cannot pin task %d: %s", task, exc)
    cv2.setNumThreads(count)
    logger.info("pinned to CPU(s) %s", sorted(chosen))
    return sorted(chosen)
