"""Bounded-memory meters: a latency ring buffer and a sliding-window rate.

Neither is thread-safe on its own; ``Telemetry`` guards them with its lock.
"""

from __future__ import annotations

import logging
from collections import deque

import numpy as np
import numpy.typing as npt

from appliance.errors import ConfigError
from appliance.pipeline.snapshot import LatencySummary

logger = logging.getLogger(__name__)

Samples = npt.NDArray[np.float64]


class LatencyWindow:
    """The last ``capacity`` samples (ms) in a fixed ring buffer."""

    def __init__(self, capacity: int = 1024) -> None:
        if capacity < 1:
            raise ConfigError(f"latency window must hold at least 1 sample, got {capacity}")
        self._ring: Samples = np.zeros(capacity, dtype=np.float64)
        self._next = 0
        self._filled = 0
        self.total = 0  # samples ever recorded

    def record(self, value_ms: float) -> None:
        self._ring[self._next] = value_ms
        self._next = (self._next + 1) % self._ring.size
        self._filled = min(self._filled + 1, self._ring.size)
        self.total += 1

    def values(self) -> Samples:
        """A copy of the samples held (in no particular order)."""
        return self._ring[: self._filled].copy()


def summarise(samples: Samples) -> LatencySummary:
    """p50/p95/p99 (linear interpolation), mean and max of ``samples``."""
    if samples.size == 0:
        return LatencySummary()
    p50, p95, p99 = (float(v) for v in np.percentile(samples, [50, 95, 99]))
    return LatencySummary(
        count=int(samples.size),
        p50=p50,
        p95=p95,
        p99=p99,
        mean=float(samples.mean()),
        max=float(samples.max()),
    )


class RateMeter:
    """Events per second over the last ``window_s`` seconds (at most ``capacity`` kept).

    Before a full window has passed since ``origin_ns`` the rate is over the
    time elapsed so far; when more than ``capacity`` events fall in the
    window, over the span of the ones kept.
    """

    def __init__(self, origin_ns: int, window_s: float = 2.0, capacity: int = 4096) -> None:
        if not window_s > 0:
            raise ConfigError(f"rate window must be > 0 s, got {window_s}")
        self.window_ns = round(window_s * 1e9)
        self._origin_ns = origin_ns
        self._events: deque[int] = deque(maxlen=capacity)

    def mark(self, now_ns: int) -> None:
        self._events.append(now_ns)

    def rate(self, now_ns: int) -> float:
        horizon = now_ns - self.window_ns
        while self._events and self._events[0] <= horizon:
            self._events.popleft()
        if not self._events:
            return 0.0
        full = len(self._events) == self._events.maxlen
        start = self._events[0] if full else max(horizon, self._origin_ns)
        elapsed_ns = now_ns - start
        return len(self._events) * 1e9 / elapsed_ns if elapsed_ns > 0 else 0.0
