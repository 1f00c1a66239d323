"""The ``/metrics`` families a fleet view needs beside the telemetry (``fleet/`` has the
Prometheus scrape configuration and the Grafana dashboard that read them).

``mirror_build_info{version, slot} 1``: the installed version and the A/B slot the device
booted from (``none`` without one); ``mirror_healthy``: 1 while ``/healthz`` says "ok".
"""

from __future__ import annotations

import logging

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from appliance.device.build import BuildInfo
from appliance.pipeline.snapshot import TelemetrySnapshot
from web_ui.metrics import PREFIX
from web_ui.status import health

logger = logging.getLogger(__name__)


def fleet_families(snap: TelemetrySnapshot, build: BuildInfo) -> list[Metric]:
    info = GaugeMetricFamily(
        PREFIX + "build_info",
        "The installed version and the A/B slot booted from (always 1)",
        labels=["version", "slot"],
    )
    info.add_metric([build.version, build.slot], 1.0)
    healthy = GaugeMetricFamily(
        PREFIX + "healthy",
        "1 while /healthz says ok (running, frames arriving, the screen showing them), else 0",
        value=float(health(snap) == "ok"),
    )
    return [info, healthy]
