"""A thermal sensor that replays a temperature trace, for tests and demos.

A trace is a CSV file of ``seconds,celsius`` rows (a header line and ``#``
comments are allowed; seconds must rise). A blank ``celsius`` is a moment the
sensor could not be read. The sensor reports the row at or before the time an
injected clock gives, counted from when the sensor was made (or ``start_s``):
before the first row it reads the first, after the last it keeps the last, so
a replay at any speed gives the same readings for the same clock times.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from appliance.errors import ConfigError
from appliance.thermal.sensors import Reading

logger = logging.getLogger(__name__)

HEADER = ("seconds", "celsius")


@dataclass(frozen=True)
class TracePoint:
    seconds: float
    celsius: float | None  # None: the sensor could not be read then


def parse_trace(text: str, origin: str = "trace") -> list[TracePoint]:
    """The points of a ``seconds,celsius`` CSV text; raises ``ConfigError`` naming the line."""
    points: list[TracePoint] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if tuple(c.lower() for c in cells) == HEADER:
            continue
        point = _point(cells, f"{origin} line {number}", raw.strip())
        if points and point.seconds <= points[-1].seconds:
            raise ConfigError(f"{origin} line {number}: seconds must rise, got {raw.strip()!r}")
        points.append(point)
    if not points:
        raise ConfigError(f"{origin}: no seconds,celsius rows")
    return points


def _point(cells: list[str], where: str, raw: str) -> TracePoint:
    if len(cells) != 2:
        raise ConfigError(f"{where}: expected seconds,celsius, got {raw!r}")
    try:
        seconds = float(cells[0])
        celsius = float(cells[1]) if cells[1] else None
    except ValueError as exc:
        raise ConfigError(f"{where}: expected numbers, got {raw!r}") from exc
    return TracePoint(seconds, celsius)


class ReplaySensor:
    """Reads ``trace`` at ``clock() - start_s``; ``clock`` is in seconds (monotonic)."""

    def __init__(
        self,
        trace: Sequence[TracePoint],
        clock: Callable[[], float],
        *,
        name: str = "replay",
        start_s: float | None = None,
    ) -> None:
        if not trace:
            raise ConfigError("a replay sensor needs at least one trace point")
        self.trace = list(trace)
        self._times = [p.seconds for p in self.trace]
        self._clock = clock
        self._name = name
        self.start_s = clock() if start_s is None else start_s

    @classmethod
    def from_csv(
        cls, path: Path, clock: Callable[[], float], *, start_s: float | None = None
    ) -> ReplaySensor:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read thermal trace {path}: {exc}") from exc
        trace = parse_trace(text, str(path))
        return cls(trace, clock, name=f"replay:{path.name}", start_s=start_s)

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"ReplaySensor({self._name!r}, {len(self.trace)} points)"

    def at(self, elapsed_s: float) -> TracePoint:
        """The trace point in force ``elapsed_s`` after the start."""
        index = bisect.bisect_right(self._times, elapsed_s) - 1
        return self.trace[max(index, 0)]

    def read(self) -> list[Reading]:
        elapsed_s = self._clock() - self.start_s
        point = self.at(elapsed_s)
        if point.celsius is None:
            detail = f"no reading at {elapsed_s:.1f} s of the trace"
            return [Reading(self._name, self._name, "unreadable", None, detail)]
        return [Reading(self._name, self._name, "ok", point.celsius)]

    def close(self) -> None:
        """Nothing to release."""
