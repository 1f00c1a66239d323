"""The read-only view of pipeline telemetry: frozen, plain data, JSON-ready.

``TelemetrySnapshot.as_dict()`` holds only str/int/float/bool/None, lists and
dicts, so ``json.dumps(snapshot.as_dict(), allow_nan=False)`` always works:
an empty latency summary reports None rather than NaN.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LatencySummary:
    """Milliseconds over the most recent samples; None while there are none."""

    count: int = 0
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    mean: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class SinkSnapshot:
    """One output: frames written, frames it lost, its rate and capture-to-write latency."""

    written: int = 0
    dropped: int = 0
    fps: float = 0.0
    e2e_ms: LatencySummary = field(default_factory=LatencySummary)


@dataclass(frozen=True)
class CameraSnapshot:
    """Whether frames arrive, and the gaps when they did not (count and seconds)."""

    connected: bool = True
    gaps: int = 0
    gap_s: float = 0.0


@dataclass(frozen=True)
class ThermalSnapshot:
    """The thermal governor's view: its state, the hottest reading, any sensor alert, the fan.

    ``state`` is ``unknown`` until a governor reports; ``temperature_c`` is None
    while no sensor reads; ``fan_duty`` (0-1) is None without a fan.
    """

    state: str = "unknown"
    temperature_c: float | None = None
    alert: str = ""
    fan_duty: float | None = None


@dataclass(frozen=True)
class LivenessSnapshot:
    """The liveness gate: its mode and the faces followed now by state.

    ``mode`` is ``unknown`` until the pipeline reports, ``none`` without a gate
    (files, the demo photo) and ``off`` when staff switched liveness off: the
    dashboard shows ``off`` as a warning.
    """

    mode: str = "unknown"
    live: int = 0
    unverified: int = 0


@dataclass(frozen=True)
class Transition:
    """A change of ``subject`` (mode, degrade, camera, runner, thermal, thermal_sensors,
    liveness, and the parts: screen, accelerator)."""

    at_unix: float
    subject: str
    from_state: str
    to_state: str
    reason: str


@dataclass(frozen=True)
class TelemetrySnapshot:
    """Everything the admin UI and /metrics read, at one instant.

    ``frames_in``: frames captured; ``frames_out``: frames handed to the
    outputs, ``swapped`` of them with a swapped face; ``passthrough``: frames
    handed on unswapped because the processor failed or was backing off.
    ``drops`` counts lost frame deliveries by reason (sink-level reasons
    count once per sink); ``errors`` counts exceptions by stage, then by exception class name.
    ``parts``: each part of the device reported so far (``screen``, ``accelerator``) and
    its problem, "" while it works; a part the device is not meant to have is absent.
    """

    at_unix: float
    uptime_s: float
    running: bool
    mode: str
    degrade_level: int
    quality: str
    faces: int
    frames_in: int
    frames_out: int
    swapped: int
    passthrough: int
    input_fps: float
    output_fps: float
    e2e_ms: LatencySummary
    stages_ms: dict[str, LatencySummary]
    drops: dict[str, int]
    errors: dict[str, dict[str, int]]
    camera: CameraSnapshot
    sinks: dict[str, SinkSnapshot]
    transitions: tuple[Transition, ...]
    thermal: ThermalSnapshot = field(default_factory=ThermalSnapshot)
    liveness: LivenessSnapshot = field(default_factory=LivenessSnapshot)
    parts: dict[str, str] = field(default_factory=dict)

    @property
    def dropped(self) -> int:
        return sum(self.drops.values())

    def error_count(self, stage: str | None = None) -> int:
        """All errors, or those of one stage."""
        stages = [stage] if stage is not None else list(self.errors)
        return sum(sum(self.errors.get(s, {}).values()) for s in stages)

    def as_dict(self) -> dict[str, Any]:
        """Plain, JSON-serialisable data (transitions as a list)."""
        data = dataclasses.asdict(self)
        data["transitions"] = list(data["transitions"])
        return data
