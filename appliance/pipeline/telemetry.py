"""Thread-safe pipeline telemetry: latencies, rates, drops, errors, state, transitions.

Writers (the runner's threads, the mode controller) call the ``record_*``
and ``set_*`` methods; readers (admin UI, /metrics) call ``snapshot()``.
Memory is bounded: latencies keep the last ``window_samples`` samples per
stage, rates the events of the last ``rate_window_s`` seconds, the
transition log the last ``max_transitions`` events.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from appliance.compat import StrEnum
from appliance.pipeline.meters import LatencyWindow, RateMeter, Samples, summarise
from appliance.pipeline.snapshot import (
    CameraSnapshot,
    LatencySummary,
    LivenessSnapshot,
    SinkSnapshot,
    TelemetrySnapshot,
    ThermalSnapshot,
    Transition,
)

logger = logging.getLogger(__name__)


class Drop(StrEnum):
    """Why a frame was not shown."""

    STALE = "stale"  # older than the latency budget
    SUPERSEDED = "superseded"  # replaced by a newer frame before processing
    IDLE = "idle"  # not processed: nobody in view, running at the idle rate
    THERMAL = "thermal"  # not processed: the device is warm, running at a capped rate
    NO_MOTION = "no_motion"  # not processed: the PIR saw nobody, running at the idle rate
    SINK_BUSY = "sink_busy"  # replaced by a newer frame before its sink took it
    ERROR = "error"  # a stage failed on it
    OUT_OF_ORDER = "out_of_order"  # not newer than the last frame a sink got


@dataclass
class _SinkMeters:
    rate: RateMeter
    e2e: LatencyWindow
    written: int = 0
    dropped: int = 0


@dataclass
class _Camera:
    connected: bool = True
    gaps: int = 0
    gap_ns: int = 0
    lost_at_ns: int = 0


class Telemetry:
    """Collects pipeline figures from many threads; ``snapshot()`` reads them."""

    def __init__(
        self,
        *,
        window_samples: int = 1024,
        rate_window_s: float = 2.0,
        max_transitions: int = 64,
        clock_ns: Callable[[], int] = time.monotonic_ns,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock_ns
        self._wall = wall_clock
        self._window = window_samples
        self._rate_window_s = rate_window_s
        self._started_ns = clock_ns()
        self._input = RateMeter(self._started_ns, rate_window_s)
        self._output = RateMeter(self._started_ns, rate_window_s)
        self._e2e = LatencyWindow(window_samples)
        self._stages: dict[str, LatencyWindow] = {}
        self._sinks: dict[str, _SinkMeters] = {}
        self._drops: Counter[str] = Counter()
        self._errors: dict[str, Counter[str]] = {}
        self._transitions: deque[Transition] = deque(maxlen=max_transitions)
        self._camera = _Camera()
        self._frames_in = self._frames_out = self._passthrough = self._swapped = 0
        self._running = False
        self._mode = "normal"
        self._degrade = 0
        self._quality = "full quality"
        self._faces = 0
        self._thermal = ThermalSnapshot()
        self._liveness = LivenessSnapshot()
        self._parts: dict[str, str] = {}

    # ---- frames and latencies -------------------------------------------------------------

    def record_input(self) -> None:
        """A frame was captured."""
        with self._lock:
            self._frames_in += 1
            self._input.mark(self._clock())

    def input_fps(self) -> float:
        """The capture rate now (cheap: no percentiles)."""
        with self._lock:
            return self._input.rate(self._clock())

    def record_output(self, e2e_ms: float, swapped: bool = False) -> None:
        """A frame (``swapped`` or not) was handed to the outputs ``e2e_ms`` after capture."""
        with self._lock:
            self._frames_out += 1
            self._swapped += int(swapped)
            self._output.mark(self._clock())
            self._e2e.record(e2e_ms)

    def record_passthrough(self) -> None:
        """A frame went on unswapped because the processor failed or was backing off."""
        with self._lock:
            self._passthrough += 1

    def record_stage(self, stage: str, ms: float) -> None:
        with self._lock:
            self._stage(stage).record(ms)

    def record_stages(self, timings_ms: Mapping[str, float]) -> None:
        with self._lock:
            for stage, ms in timings_ms.items():
                self._stage(stage).record(ms)

    def _stage(self, stage: str) -> LatencyWindow:
        window = self._stages.get(stage)
        if window is None:
            window = self._stages[stage] = LatencyWindow(self._window)
        return window

    # ---- sinks, drops, errors ---------------------------------------------------------------

    def add_sink(self, name: str) -> None:
        """Make ``name`` appear in snapshots before it writes anything."""
        with self._lock:
            self._sink(name)

    def record_sink_write(self, name: str, e2e_ms: float, write_ms: float) -> None:
        """Sink ``name`` got a frame ``e2e_ms`` after its capture and wrote it in ``write_ms``."""
        with self._lock:
            meters = self._sink(name)
            meters.written += 1
            meters.rate.mark(self._clock())
            meters.e2e.record(e2e_ms)
            self._stage(f"sink:{name}").record(write_ms)

    def _sink(self, name: str) -> _SinkMeters:
        meters = self._sinks.get(name)
        if meters is None:
            rate = RateMeter(self._clock(), self._rate_window_s)
            meters = self._sinks[name] = _SinkMeters(rate, LatencyWindow(self._window))
        return meters

    def record_drop(self, reason: Drop, sink: str | None = None) -> None:
        """One frame (or, with ``sink``, one delivery to that sink) was dropped."""
        with self._lock:
            self._drops[reason.value] += 1
            if sink is not None:
                self._sink(sink).dropped += 1

    def record_error(self, stage: str, error: BaseException | str) -> None:
        """``stage`` failed; ``error`` is the exception or its kind."""
        kind = error if isinstance(error, str) else type(error).__name__
        with self._lock:
            self._errors.setdefault(stage, Counter())[kind] += 1

    # ---- state -----------------------------------------------------------------------------

    def set_running(self, running: bool, reason: str) -> None:
        with self._lock:
            if running != self._running:
                self._transition("runner", _run_state(self._running), _run_state(running), reason)
                self._running = running

    def set_mode(self, mode: str, reason: str) -> None:
        with self._lock:
            if mode != self._mode:
                self._transition("mode", self._mode, mode, reason)
                self._mode = mode

    def set_degrade_level(self, level: int, reason: str, quality: str = "") -> None:
        """Quality level ``level`` (0 is full quality), described as ``quality``."""
        with self._lock:
            if level != self._degrade:
                self._transition("degrade", str(self._degrade), str(level), reason)
                self._degrade = level
            self._quality = quality or ("full quality" if level == 0 else f"level {level}")

    def set_thermal(
        self,
        state: str,
        temperature_c: float | None,
        reason: str,
        *,
        alert: str = "",
        fan_duty: float | None = None,
    ) -> None:
        """The thermal governor's latest round (state, hottest reading, alert, fan duty).

        A change of state is a ``thermal`` transition with ``reason``; a sensor
        alert starting or ending is a ``thermal_sensors`` transition.
        """
        with self._lock:
            before = self._thermal
            if state != before.state:
                self._transition("thermal", before.state, state, reason)
            if bool(alert) != bool(before.alert):
                after = "failed" if alert else "ok"
                self._transition(
                    "thermal_sensors",
                    "failed" if before.alert else "ok",
                    after,
                    alert or "sensors read again",
                )
            self._thermal = ThermalSnapshot(state, temperature_c, alert, fan_duty)

    def set_faces(self, faces: int) -> None:
        with self._lock:
            self._faces = faces

    def set_liveness(self, live: int, unverified: int, mode: str) -> None:
        """Faces followed now that are LIVE / UNVERIFIED, and the gate's mode (a change of
        mode is a ``liveness`` transition)."""
        with self._lock:
            if mode != self._liveness.mode:
                self._transition("liveness", self._liveness.mode, mode, "liveness mode")
            self._liveness = LivenessSnapshot(mode, live, unverified)

    def set_part(self, part: str, problem: str, failed_state: str = "missing") -> None:
        """``part`` (screen, accelerator) works (``problem`` "") or not, and why. A change
        is a ``part`` transition between "ok" and ``failed_state`` (from "unknown" when the
        first report is a problem), or a new reason."""
        with self._lock:
            before = self._parts.get(part)
            if before == problem:
                return
            self._parts[part] = problem
            if before is None and not problem:
                return  # working from the start: nothing changed
            was = "unknown" if before is None else failed_state if before else "ok"
            self._transition(part, was, failed_state if problem else "ok", problem or "working")

    def camera_lost(self, reason: str) -> bool:
        """Frames stopped coming; a gap starts (no-op while already in one). True: it started."""
        with self._lock:
            if not self._camera.connected:
                return False
            self._camera.connected = False
            self._camera.gaps += 1
            self._camera.lost_at_ns = self._clock()
            self._transition("camera", "connected", "disconnected", reason)
            return True

    def camera_ok(self) -> bool:
        """A frame came; ends a gap if there was one (cheap when there was none). True: it ended."""
        with self._lock:
            if self._camera.connected:
                return False
            self._camera.connected = True
            self._camera.gap_ns += self._clock() - self._camera.lost_at_ns
            self._transition("camera", "disconnected", "connected", "frames again")
            return True

    def _transition(self, subject: str, before: str, after: str, reason: str) -> None:
        self._transitions.append(Transition(self._wall(), subject, before, after, reason))
        logger.info("%s: %s -> %s (%s)", subject, before, after, reason)

    # ---- reading ---------------------------------------------------------------------------

    def latency_samples(self) -> tuple[Samples, dict[str, Samples]]:
        """Copies of the e2e and per-stage samples held (the last window's frames)."""
        with self._lock:
            return self._e2e.values(), {name: w.values() for name, w in self._stages.items()}

    def snapshot(self) -> TelemetrySnapshot:
        """A consistent copy of every figure; percentiles are computed outside the lock."""
        with self._lock:
            now = self._clock()
            e2e = self._e2e.values()
            stages = {name: w.values() for name, w in self._stages.items()}
            sinks = {name: self._sink_state(m, now) for name, m in self._sinks.items()}
            snap = TelemetrySnapshot(
                at_unix=self._wall(),
                uptime_s=(now - self._started_ns) / 1e9,
                running=self._running,
                mode=self._mode,
                degrade_level=self._degrade,
                quality=self._quality,
                faces=self._faces,
                frames_in=self._frames_in,
                frames_out=self._frames_out,
                swapped=self._swapped,
                passthrough=self._passthrough,
                input_fps=self._input.rate(now),
                output_fps=self._output.rate(now),
                e2e_ms=LatencySummary(),  # the summaries are filled in below
                stages_ms={},
                drops=dict(self._drops),
                errors={stage: dict(kinds) for stage, kinds in self._errors.items()},
                camera=self._camera_state(now),
                sinks={},
                transitions=tuple(self._transitions),
                thermal=self._thermal,
                liveness=self._liveness,
                parts=dict(self._parts),
            )
        return _with_summaries(snap, e2e, stages, sinks)

    def _sink_state(self, meters: _SinkMeters, now: int) -> tuple[int, int, float, Samples]:
        return meters.written, meters.dropped, meters.rate.rate(now), meters.e2e.values()

    def _camera_state(self, now: int) -> CameraSnapshot:
        cam = self._camera
        open_gap = 0 if cam.connected else now - cam.lost_at_ns
        return CameraSnapshot(cam.connected, cam.gaps, (cam.gap_ns + open_gap) / 1e9)


def _run_state(running: bool) -> str:
    return "running" if running else "stopped"


def _with_summaries(
    snap: TelemetrySnapshot,
    e2e: Samples,
    stages: dict[str, Samples],
    sinks: dict[str, tuple[int, int, float, Samples]],
) -> TelemetrySnapshot:
    """``snap`` with its latency summaries computed from the copied samples."""
    return dataclasses.replace(
        snap,
        e2e_ms=summarise(e2e),
        stages_ms={name: summarise(values) for name, values in sorted(stages.items())},
        sinks={
            name: SinkSnapshot(written, dropped, fps, summarise(values))
            for name, (written, dropped, fps, values) in sinks.items()
        },
    )
