"""``/metrics``: the telemetry snapshot in the Prometheus text format.

Latencies are gauges with a ``quantile`` label (the telemetry keeps a window
of recent samples, not lifetime sums). Top-level snapshot fields this module
does not know yet (thermal, liveness...) are exported generically: a number
or bool as ``mirror_<field>``, a string as ``mirror_<field>{value=...} 1``; a
nested field is flattened (``thermal.temperature_c`` -> ``mirror_thermal_temperature_c``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import CollectorRegistry

from appliance.control.live_apply import flatten
from appliance.pipeline.snapshot import LatencySummary, TelemetrySnapshot

logger = logging.getLogger(__name__)

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
PREFIX = "mirror_"
QUANTILES = (("0.5", "p50"), ("0.95", "p95"), ("0.99", "p99"))
KNOWN_FIELDS = frozenset(
    {
        "at_unix", "uptime_s", "running", "mode", "degrade_level", "quality", "faces",
        "frames_in", "frames_out", "swapped", "passthrough", "input_fps", "output_fps",
        "e2e_ms", "stages_ms", "drops", "errors", "camera", "sinks", "transitions", "parts",
    }
)  # fmt: skip


def render_metrics(snapshot: TelemetrySnapshot, extra: Iterable[Metric] = ()) -> bytes:
    """The snapshot's families after the ``extra`` ones (see ``web_ui.fleet_metrics``)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_SnapshotCollector(snapshot, extra))
    return generate_latest(registry)


class _SnapshotCollector:
    def __init__(self, snapshot: TelemetrySnapshot, extra: Iterable[Metric] = ()) -> None:
        self.snapshot = snapshot
        self.extra = list(extra)

    def collect(self) -> Iterable[Metric]:
        snap = self.snapshot
        families = [*self.extra, *_state(snap), *_frames(snap), *_latency(snap), *_sinks(snap)]
        taken = {family.name for family in families}
        for family in _extras(snap.as_dict()):
            if family.name not in taken:
                taken.add(family.name)
                families.append(family)
        return families


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, doc, value=value)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(PREFIX + name, doc, value=value)


def _state(snap: TelemetrySnapshot) -> Iterator[Metric]:
    yield _gauge("running", "1 while the pipeline runs", float(snap.running))
    yield _gauge("uptime_seconds", "Seconds since the telemetry started", snap.uptime_s)
    yield _gauge("faces", "Faces tracked in the latest frame", snap.faces)
    yield _gauge("degrade_level", "Quality level (0: full quality)", snap.degrade_level)
    mode = GaugeMetricFamily(
        PREFIX + "mode", "The processing mode (1 for the current)", labels=["mode"]
    )
    mode.add_metric([snap.mode], 1.0)
    yield mode
    yield _gauge("camera_connected", "1 while frames arrive", float(snap.camera.connected))
    yield _counter("camera_gaps", "Times frames stopped coming", snap.camera.gaps)
    yield _counter("camera_gap_seconds", "Seconds without frames", snap.camera.gap_s)
    parts = GaugeMetricFamily(
        PREFIX + "part_ok", "1 while a part works (screen, accelerator), 0 if not", labels=["part"]
    )
    for part, problem in sorted(snap.parts.items()):
        parts.add_metric([part], float(not problem))
    yield parts


def _frames(snap: TelemetrySnapshot) -> Iterator[Metric]:
    fps = GaugeMetricFamily(PREFIX + "fps", "Frames per second, recent", labels=["direction"])
    fps.add_metric(["input"], snap.input_fps)
    fps.add_metric(["output"], snap.output_fps)
    yield fps
    yield _counter("frames_captured", "Frames captured", snap.frames_in)
    yield _counter("frames_shown", "Frames handed to the outputs", snap.frames_out)
    yield _counter("frames_swapped", "Frames shown with a swapped face", snap.swapped)
    yield _counter("frames_passthrough", "Frames shown unswapped after a failure", snap.passthrough)
    drops = CounterMetricFamily(
        PREFIX + "frames_dropped", "Frames not shown, by reason", labels=["reason"]
    )
    for reason, count in sorted(snap.drops.items()):
        drops.add_metric([reason], count)
    yield drops
    errors = CounterMetricFamily(PREFIX + "errors", "Stage failures", labels=["stage", "kind"])
    for stage, kinds in sorted(snap.errors.items()):
        for kind, count in sorted(kinds.items()):
            errors.add_metric([stage, kind], count)
    yield errors


def _add_quantiles(family: GaugeMetricFamily, labels: list[str], summary: LatencySummary) -> None:
    for quantile, attr in QUANTILES:
        value = getattr(summary, attr)
        if value is not None:
            family.add_metric([*labels, quantile], value)


def _latency(snap: TelemetrySnapshot) -> Iterator[Metric]:
    e2e = GaugeMetricFamily(
        PREFIX + "e2e_latency_ms", "Capture to output latency, recent frames", labels=["quantile"]
    )
    _add_quantiles(e2e, [], snap.e2e_ms)
    yield e2e
    stages = GaugeMetricFamily(
        PREFIX + "stage_latency_ms",
        "Per-stage latency, recent frames",
        labels=["stage", "quantile"],
    )
    for stage, summary in snap.stages_ms.items():
        _add_quantiles(stages, [stage], summary)
    yield stages


def _sinks(snap: TelemetrySnapshot) -> Iterator[Metric]:
    written = CounterMetricFamily(PREFIX + "sink_written", "Frames written", labels=["sink"])
    dropped = CounterMetricFamily(PREFIX + "sink_dropped", "Frames a sink lost", labels=["sink"])
    fps = GaugeMetricFamily(PREFIX + "sink_fps", "Frames written per second", labels=["sink"])
    for name, sink in sorted(snap.sinks.items()):
        written.add_metric([name], sink.written)
        dropped.add_metric([name], sink.dropped)
        fps.add_metric([name], sink.fps)
    yield from (written, dropped, fps)


def metric_name(field: str) -> str:
    return PREFIX + (re.sub(r"[^a-zA-Z0-9_]", "_", field).strip("_") or "field")


def _extras(data: Mapping[str, Any]) -> Iterator[Metric]:
    """Unknown fields, flattened: ``thermal.temperature_c`` -> ``mirror_thermal_temperature_c``."""
    extras = {key: value for key, value in data.items() if key not in KNOWN_FIELDS}
    for field, value in flatten(extras).items():
        name = metric_name(field)
        doc = f"Telemetry field {field}"
        if isinstance(value, bool | int | float):
            yield GaugeMetricFamily(name, doc, value=float(value))
        elif isinstance(value, str) and value:
            family = GaugeMetricFamily(name, doc, labels=["value"])
            family.add_metric([value], 1.0)
            yield family
