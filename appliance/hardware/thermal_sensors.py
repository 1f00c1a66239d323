"""Read the profile's thermal sensors once: sysfs files in millidegrees, or NVML.

A glob expands to every file it matches under the root. Jetson reports an
offline zone as -256 C: that is ``offline``, not a temperature. NVML sensors
(``nvml:N``) describe the running machine, so a probe of another root cannot
read them.
"""

from __future__ import annotations

import glob
import logging
from pathlib import Path

from appliance.hardware.nvidia import NvmlLoader, Runner, gpu_temperature_c, load_nvml, run_command
from appliance.hardware.profile import ThermalSpec
from appliance.hardware.report import SensorReport, ThermalReport

logger = logging.getLogger(__name__)

OFFLINE_BELOW_C = -200.0  # Jetson: -256 C for a sensor that is switched off


def _relative(root: Path, path: Path) -> str:
    return "/" + str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def read_millidegrees(path: Path) -> float:
    """``path``'s value in degrees C; raises ``OSError`` or ``ValueError``."""
    return int(path.read_text(encoding="ascii").strip()) / 1000.0


def _file_reading(sensor: str, path: Path, shown: str) -> SensorReport:
    try:
        temperature_c = read_millidegrees(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        detail = " ".join(str(exc).split())
        return SensorReport(
            sensor=sensor, path=shown, status="unreadable", temperature_c=None, detail=detail
        )
    if temperature_c <= OFFLINE_BELOW_C:
        return SensorReport(
            sensor=sensor,
            path=shown,
            status="offline",
            temperature_c=None,
            detail=f"reads {temperature_c:g} C: sensor offline",
        )
    return SensorReport(
        sensor=sensor, path=shown, status="ok", temperature_c=temperature_c, detail=""
    )


def _file_sensor(root: Path, sensor: str) -> list[SensorReport]:
    pattern = glob.escape(str(root).rstrip("/")) + "/" + sensor.lstrip("/")
    paths = [Path(p) for p in sorted(glob.glob(pattern))]
    if not paths:
        return [
            SensorReport(
                sensor=sensor, path=sensor, status="missing", temperature_c=None, detail="no file"
            )
        ]
    return [_file_reading(sensor, path, _relative(root, path)) for path in paths]


def _nvml_sensor(sensor: str, live: bool, nvml_loader: NvmlLoader, runner: Runner) -> SensorReport:
    if not live:
        return SensorReport(
            sensor=sensor,
            path=sensor,
            status="unreadable",
            temperature_c=None,
            detail="NVML reads only the running machine, not another root",
        )
    index = int(sensor.split(":", 1)[1])
    try:
        temperature_c = gpu_temperature_c(index, nvml_loader=nvml_loader, runner=runner)
    except OSError as exc:
        status = "missing" if isinstance(exc, FileNotFoundError) else "unreadable"
        return SensorReport(
            sensor=sensor, path=sensor, status=status, temperature_c=None, detail=str(exc)
        )
    return SensorReport(
        sensor=sensor, path=sensor, status="ok", temperature_c=temperature_c, detail=""
    )


def read_sensors(
    root: Path,
    spec: ThermalSpec,
    *,
    live: bool,
    nvml_loader: NvmlLoader = load_nvml,
    runner: Runner = run_command,
) -> ThermalReport:
    readings: list[SensorReport] = []
    for sensor in spec.sensors:
        if sensor.startswith("nvml:"):
            readings.append(_nvml_sensor(sensor, live, nvml_loader, runner))
        else:
            readings.extend(_file_sensor(root, sensor))
    return ThermalReport(
        warm_c=spec.warm_c, hot_c=spec.hot_c, critical_c=spec.critical_c, sensors=readings
    )
