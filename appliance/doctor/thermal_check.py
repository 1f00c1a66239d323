"""``mirror doctor``'s thermal section: the profile's sensors read once (``thermal``).

A glob expands to every file it matches under the root, filtered by the
profile's zone types. Jetson reports an offline zone as -256 C: that is
``offline``, not a temperature. NVML sensors (``nvml:N``) describe the running
machine, so a probe of another root cannot read them.
"""

from __future__ import annotations

import logging
from pathlib import Path

from appliance.device.nvidia import NvmlLoader, Runner, load_nvml, run_command
from appliance.device.profile import ThermalSpec
from appliance.device.report import SensorReport, ThermalReport
from appliance.thermal.sensors import OFFLINE_BELOW_C, close_all, open_sensors, read_all

logger = logging.getLogger(__name__)

__all__ = ["OFFLINE_BELOW_C", "read_sensors"]


def read_sensors(
    root: Path,
    spec: ThermalSpec,
    *,
    live: bool,
    nvml_loader: NvmlLoader = load_nvml,
    runner: Runner = run_command,
) -> ThermalReport:
    sensors = open_sensors(spec, root, live=live, nvml_loader=nvml_loader, runner=runner)
    try:
        readings = read_all(sensors)
    finally:
        close_all(sensors)
    return ThermalReport(
        warm_c=spec.warm_c,
        hot_c=spec.hot_c,
        critical_c=spec.critical_c,
        sensors=[
            SensorReport(
                sensor=r.sensor,
                path=r.path,
                status=r.status,
                temperature_c=r.temperature_c,
                detail=r.detail,
            )
            for r in readings
        ],
    )
