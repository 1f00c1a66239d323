"""CPU time per thread of this process, from ``/proc/self/task`` (Linux).

Each task's ``schedstat`` holds its time on a CPU in nanoseconds (``stat``'s
utime + stime, in clock ticks, where it is absent). Python threads are named
by their ``threading`` name through their native id; the runtimes' own
threads (OpenCV's and XNNPACK's pools) have no Python name and are added up
under ``NATIVE``. The threads of this process's child processes (the swap
helper, ``pipeline.swap_helper``) are counted too, under ``CHILD``: their work
is this process's work done elsewhere. A thread that ends keeps the time last
sampled for it, so callers sample every few tens of milliseconds while the
work runs.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path

logger = logging.getLogger(__name__)

TASKS = Path("/proc/self/task")
NATIVE = "native"
CHILD = "helper"
PROC = Path("/proc")
CHILDREN_EVERY_S = 1.0
_TICK_NS = 1e9 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


def task_cpu_ns(tid: int, tasks: Path = TASKS) -> int | None:
    """CPU time of task ``tid`` so far (ns), or None when it is gone or unreadable."""
    folder = tasks / str(tid)
    try:
        return int((folder / "schedstat").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        pass
    try:
        fields = (folder / "stat").read_text().rsplit(")", 1)[1].split()
        return round((int(fields[11]) + int(fields[12])) * _TICK_NS)  # utime, stime
    except (OSError, IndexError, ValueError):
        return None


def sample(tasks: Path = TASKS) -> dict[int, int]:
    """CPU time (ns) of every task of this process now, by task id."""
    try:
        tids = [int(p.name) for p in tasks.iterdir() if p.name.isdigit()]
    except OSError:
        return {}
    out: dict[int, int] = {}
    for tid in tids:
        ns = task_cpu_ns(tid, tasks)
        if ns is not None:
            out[tid] = ns
    return out


def child_pids(tasks: Path = TASKS) -> list[int]:
    """The child processes of this process (every thread's), where ``/proc`` lists them."""
    pids: list[int] = []
    try:
        for task in tasks.iterdir():
            try:
                pids += [int(p) for p in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
    except OSError:
        return []
    return pids


def sample_processes(pids: list[int], proc: Path = PROC) -> dict[int, int]:
    """CPU time (ns) of every task of the processes ``pids`` now, by task id."""
    out: dict[int, int] = {}
    for pid in pids:
        out.update(sample(proc / str(pid) / "task"))
    return out


def python_names() -> dict[int, str]:
    """The ``threading`` name of each live Python thread, by native id."""
    return {t.native_id: t.name for t in threading.enumerate() if t.native_id is not None}


class ThreadCpu:
    """Per-thread CPU time between ``start`` and the last ``update``, by thread name."""

    def __init__(self, tasks: Path = TASKS, children_every_s: float = CHILDREN_EVERY_S) -> None:
        self.tasks = tasks
        self.children_every_s = children_every_s
        self._start: dict[int, int] = {}
        self._last: dict[int, int] = {}
        self._names: dict[int, str] = {}
        self._children: list[int] = []
        self._children_at: float | None = None

    @property
    def children(self) -> list[int]:
        """This process's child processes, looked for at most every ``children_every_s``
        (a file per thread to read: a sampler every 50 ms doubled its own CPU time)."""
        now = time.monotonic()
        if self._children_at is None or now - self._children_at >= self.children_every_s:
            self._children, self._children_at = child_pids(self.tasks), now
        return self._children

    def start(self) -> None:
        self._children_at = None
        children = sample_processes(self.children)
        self._start = sample(self.tasks) | children
        self._last = dict(self._start)
        self._names = python_names() | dict.fromkeys(children, CHILD)

    def update(self) -> None:
        """Take a sample (threads that started since are counted from zero)."""
        children = sample_processes(self.children)
        self._last.update(sample(self.tasks))
        self._last.update(children)
        self._names.update(python_names())
        self._names.update(dict.fromkeys(children, CHILD))

    def by_name(self) -> dict[str, float]:
        """Milliseconds of CPU per thread name (repeated names added up), largest first."""
        totals: dict[str, float] = {}
        for tid, ns in self._last.items():
            name = self._names.get(tid, NATIVE)
            used = (ns - self._start.get(tid, 0)) / 1e6
            if used > 0:
                totals[name] = totals.get(name, 0.0) + used
        return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def short_name(name: str) -> str:
    """A thread's name without the runner's prefix and pool numbering (``faces_0``)."""
    name = name.removeprefix("mirror-")
    return name.split("_")[0] if name.startswith("faces") else name


def percent_line(cpu_ms: Mapping[str, float], wall_s: float, top: int = 4) -> str:
    """``process 61 / capture 9 / ...`` (% of one core) for the ``top`` busiest threads."""
    if wall_s <= 0 or not cpu_ms:
        return "-"
    merged: dict[str, float] = {}
    for name, ms in cpu_ms.items():
        key = short_name(name)
        merged[key] = merged.get(key, 0.0) + ms
    ranked = sorted(merged.items(), key=lambda kv: -kv[1])[:top]
    return " / ".join(f"{name} {ms / (10.0 * wall_s):.0f}" for name, ms in ranked)
