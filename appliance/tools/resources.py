"""CPU use and peak resident memory of this process over a stretch of work.

``ResourceMeter`` is a context manager: on exit it holds the wall time, the
process CPU time (all threads) as a percentage of that wall time (so two busy
cores read 200 %), and the peak resident set size seen by a sampler thread
reading ``/proc/self/statm``. Where ``/proc`` is absent the peak falls back to
``getrusage``'s ``ru_maxrss``, which is the peak of the whole process life.
The same sampler follows the CPU time of each thread (``thread_cpu``):
``thread_cpu_ms`` by thread name. Child processes (the swap helper) count in
the CPU time and the resident size: they do this process's work.
"""

from __future__ import annotations

import logging
import os
import resource
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

from typing_extensions import Self

from appliance.tools.thread_cpu import CHILD, PROC, ThreadCpu

logger = logging.getLogger(__name__)

STATM = Path("/proc/self/statm")
MIB = 1024 * 1024


def rss_bytes(statm: Path = STATM) -> int | None:
    """The current resident set size, or None where ``/proc`` cannot tell."""
    try:
        resident_pages = int(statm.read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def family_rss_bytes(children: list[int]) -> int | None:
    """The resident size of this process and its child processes ``children`` together."""
    own = rss_bytes()
    if own is None:
        return None
    return own + sum(rss_bytes(PROC / str(pid) / "statm") or 0 for pid in children)


def max_rss_bytes() -> int:
    """The peak resident set size of the process's whole life (``getrusage``)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports KiB


class ResourceMeter:
    """Measures wall time, CPU % and peak RSS (MiB) between ``__enter__`` and ``__exit__``."""

    def __init__(self, interval_s: float = 0.05) -> None:
        self.interval_s = interval_s
        self.wall_s = 0.0
        self.cpu_s = 0.0
        self.peak_rss_bytes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._wall0 = self._cpu0 = 0.0
        self._threads = ThreadCpu()
        self.thread_cpu_ms: dict[str, float] = {}  # by thread name, largest first

    @property
    def cpu_percent(self) -> float:
        """Process CPU time over wall time, x100 (up to 100 per core)."""
        return 100.0 * self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def peak_rss_mib(self) -> float:
        return self.peak_rss_bytes / MIB

    def __enter__(self) -> Self:
        self._threads.start()  # looks for the child processes afresh
        self.peak_rss_bytes = family_rss_bytes(self._threads.children) or 0
        if self.peak_rss_bytes:
            self._stop.clear()
            self._thread = threading.Thread(target=self._sample, name="mirror-rss", daemon=True)
            self._thread.start()
        self._wall0, self._cpu0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.wall_s = time.perf_counter() - self._wall0
        self.cpu_s = time.process_time() - self._cpu0
        if self._thread is None:
            self.peak_rss_bytes = max_rss_bytes()
        else:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self._note_rss()
        self._threads.update()
        self.thread_cpu_ms = self._threads.by_name()
        self.cpu_s += self.thread_cpu_ms.get(CHILD, 0.0) / 1000.0

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._note_rss()
            self._threads.update()

    def _note_rss(self) -> None:
        now = family_rss_bytes(self._threads.children) or 0
        self.peak_rss_bytes = max(self.peak_rss_bytes, now)
