"""The One Euro filter (Casiez, Roussel, Vogel, CHI 2012), vectorised over arrays of points.

A first-order low-pass filter whose cutoff rises with the signal's speed: slow
or still input is smoothed hard (no shimmer), fast input passes with little
lag. ``x̂ = x̂' + α (x - x̂')`` with ``α = 1 / (1 + τ / dt)``, ``τ = 1 / (2π fc)``
and ``fc = min_cutoff + beta · |ẋ̂| / scale``, where ``ẋ̂`` is the speed low-passed
at ``d_cutoff``.

Two departures from the paper, both for faces:

* The speed is measured per point (the norm over the last axis), so the x, y
  and z of a landmark share one cutoff and the mesh is not sheared by
  per-axis lag.
* The speed is divided by ``scale`` (e.g. the face's inter-ocular distance in
  pixels), so ``beta`` is in "per face size per second" and the same
  parameters suit a small, far face and a large, near one.

Times are capture timestamps in nanoseconds. The first sample passes through
unchanged; a step of zero or backwards in time (a duplicated or reordered
timestamp) is treated as the last good frame interval, so nothing divides by
zero.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

DEFAULT_DT_S = 1.0 / 30.0  # interval assumed until two distinct timestamps were seen


@dataclass(frozen=True)
class OneEuroParams:
    """Cutoffs in Hz; ``beta`` per (scale unit per second) of speed."""

    min_cutoff: float = 0.5
    beta: float = 6.0
    d_cutoff: float = 2.0


def smoothing_factor(cutoff_hz: FloatArray | float, dt_s: float) -> FloatArray:
    """α of an exponential low-pass with the given cutoff, for a sample interval ``dt_s``."""
    tau = 1.0 / (2.0 * math.pi * np.asarray(cutoff_hz, np.float32))
    alpha: FloatArray = (1.0 / (1.0 + tau / np.float32(dt_s))).astype(np.float32)
    return alpha


class OneEuroFilter:
    """Smooths a stream of same-shaped arrays (e.g. 478 x 3 landmarks)."""

    def __init__(self, params: OneEuroParams | None = None) -> None:
        self.params = params or OneEuroParams()
        self._value: FloatArray | None = None
        self._speed: FloatArray | None = None
        self._last_ns = 0
        self._dt_s = DEFAULT_DT_S

    def reset(self) -> None:
        """Forget the past: the next sample passes through unchanged."""
        self._value = None
        self._speed = None
        self._dt_s = DEFAULT_DT_S

    @property
    def started(self) -> bool:
        return self._value is not None

    def __call__(self, x: FloatArray, timestamp_ns: int, scale: float = 1.0) -> FloatArray:
        """``x`` (last axis: coordinates) filtered; ``scale`` > 0 is the unit of speed."""
        sample = np.asarray(x, np.float32)
        previous = self._value
        if previous is None or previous.shape != sample.shape:
            return self._start(sample, timestamp_ns)
        dt = self._interval(timestamp_ns)
        speed = _point_speed(sample - previous, dt)
        assert self._speed is not None
        self._speed = self._speed + smoothing_factor(self.params.d_cutoff, dt) * (
            speed - self._speed
        )
        cutoff = self.params.min_cutoff + self.params.beta * self._speed / max(scale, 1e-6)
        alpha = smoothing_factor(cutoff, dt)[..., None]
        self._value = previous + alpha * (sample - previous)
        return self._value.copy()

    def _start(self, sample: FloatArray, timestamp_ns: int) -> FloatArray:
        self._value = sample.copy()
        self._speed = np.zeros(sample.shape[:-1], np.float32)
        self._last_ns = timestamp_ns
        return sample.copy()

    def _interval(self, timestamp_ns: int) -> float:
        """Seconds since the previous sample; the last good interval when time did not advance."""
        step = timestamp_ns - self._last_ns
        self._last_ns = max(self._last_ns, timestamp_ns)
        if step > 0:
            self._dt_s = step * 1e-9
        return self._dt_s


def _point_speed(delta: FloatArray, dt_s: float) -> FloatArray:
    """Speed of each point (norm over the last axis) over ``dt_s`` seconds."""
    speed: FloatArray = (np.linalg.norm(delta, axis=-1) / np.float32(dt_s)).astype(np.float32)
    return speed
