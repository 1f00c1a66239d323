"""Thermal sensors: sysfs files in millidegrees (thermal zones, a PCIe Coral) and NVML.

Files are read under an injectable root, as the probe reads them, so tests fake
any device. A sensor never guesses: a file that cannot be read is
``unreadable``, a Jetson zone reading -256 C is ``offline``, a glob or zone
type that matches nothing is ``missing``; only an ``ok`` reading carries a
temperature. A profile sensor may expand to several readings (a glob), and
``zone_types`` keeps only the thermal zones of those types (a zone whose type
cannot be read is kept: it cannot be told apart). ``nvml:N`` reads GPU N
through ``pynvml`` when importable, else ``nvidia-smi``; NVML describes the
running machine, so a sensor for another root reports it cannot read it.
"""

from __future__ import annotations

import glob
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from appliance.device.nvidia import NvmlLoader, Runner, gpu_temperature_c, load_nvml, run_command
from appliance.device.profile import ThermalSpec
from appliance.device.report import SensorStatus

logger = logging.getLogger(__name__)

OFFLINE_BELOW_C = -200.0  # Jetson: -256 C for a sensor that is switched off
NVML_TEMPERATURE_GPU = 0  # pynvml.NVML_TEMPERATURE_GPU
ZONE_PREFIX = "thermal_zone"


@dataclass(frozen=True)
class Reading:
    """One sensor read: ``temperature_c`` is set only when ``status`` is ``ok``."""

    sensor: str  # as the profile names it (path, glob or nvml:N)
    path: str  # the file read (under the probed root), or the sensor itself
    status: SensorStatus
    temperature_c: float | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class ThermalSensor(Protocol):
    """Anything the governor can poll: zones, NVML, a replayed trace."""

    @property
    def name(self) -> str: ...

    def read(self) -> list[Reading]: ...

    def close(self) -> None: ...


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def read_millidegrees(path: Path) -> float:
    """``path``'s value in degrees C; raises ``OSError`` or ``ValueError``."""
    return int(path.read_text(encoding="ascii").strip()) / 1000.0


def read_file(sensor: str, path: Path, shown: str) -> Reading:
    """One millidegree file as a reading (never raises)."""
    try:
        temperature_c = read_millidegrees(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return Reading(sensor, shown, "unreadable", None, _one_line(exc))
    if temperature_c <= OFFLINE_BELOW_C:
        return Reading(sensor, shown, "offline", None, f"reads {temperature_c:g} C: sensor offline")
    return Reading(sensor, shown, "ok", temperature_c)


def zone_type(path: Path) -> str | None:
    """The ``type`` of the thermal zone holding ``path``; None for other files or unreadable."""
    if not path.parent.name.startswith(ZONE_PREFIX):
        return None
    try:
        return (path.parent / "type").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


class FileSensor:
    """A millidegree file, or every file a glob matches under ``root``."""

    def __init__(self, root: Path, pattern: str, zone_types: Sequence[str] = ()) -> None:
        self.root = root
        self.pattern = pattern
        self.zone_types = {t.lower() for t in zone_types}

    @property
    def name(self) -> str:
        return self.pattern

    def __repr__(self) -> str:
        return f"FileSensor({self.pattern!r}, root={str(self.root)!r})"

    def read(self) -> list[Reading]:
        found = sorted(
            glob.glob(glob.escape(str(self.root).rstrip("/")) + "/" + self.pattern.lstrip("/"))
        )
        paths = [Path(p) for p in found]
        kept = [p for p in paths if self._wanted(p)]
        if not kept:
            return [Reading(self.pattern, self.pattern, "missing", None, self._why_none(paths))]
        return [read_file(self.pattern, p, self._shown(p)) for p in kept]

    def close(self) -> None:
        """Nothing to release: files are opened per read."""

    def _wanted(self, path: Path) -> bool:
        if not self.zone_types:
            return True
        kind = zone_type(path)
        return kind is None or kind.lower() in self.zone_types

    def _why_none(self, paths: list[Path]) -> str:
        if not paths:
            return "no file"
        seen = ", ".join(sorted({zone_type(p) or "?" for p in paths}))
        wanted = ", ".join(sorted(self.zone_types))
        return f"no zone of type {wanted} (found {seen})"

    def _shown(self, path: Path) -> str:
        if path.is_relative_to(self.root):
            return "/" + str(path.relative_to(self.root))
        return str(path)


class NvmlSensor:
    """``nvml:N``: GPU N's temperature; NVML stays initialised until ``close``."""

    def __init__(
        self,
        sensor: str,
        *,
        live: bool = True,
        nvml_loader: NvmlLoader = load_nvml,
        runner: Runner = run_command,
    ) -> None:
        self.sensor = sensor
        self.index = int(sensor.split(":", 1)[1])
        self.live = live
        self._loader = nvml_loader
        self._runner = runner
        self._nvml: Any = None
        self._handle: Any = None

    @property
    def name(self) -> str:
        return self.sensor

    def __repr__(self) -> str:
        return f"NvmlSensor({self.sensor!r})"

    def read(self) -> list[Reading]:
        if not self.live:
            detail = "NVML reads only the running machine, not another root"
            return [Reading(self.sensor, self.sensor, "unreadable", None, detail)]
        try:
            temperature_c = self._temperature()
        except FileNotFoundError as exc:
            return [Reading(self.sensor, self.sensor, "missing", None, _one_line(exc))]
        except OSError as exc:
            return [Reading(self.sensor, self.sensor, "unreadable", None, _one_line(exc))]
        return [Reading(self.sensor, self.sensor, "ok", temperature_c)]

    def close(self) -> None:
        nvml, self._nvml, self._handle = self._nvml, None, None
        if nvml is not None:
            try:
                nvml.nvmlShutdown()
            except Exception as exc:  # NVMLError has no stable import path
                logger.debug("NVML shutdown failed: %s", exc)

    def _temperature(self) -> float:
        nvml = self._open()
        if nvml is None:  # no pynvml: nvidia-smi, or FileNotFoundError without it
            return gpu_temperature_c(self.index, nvml_loader=lambda: None, runner=self._runner)
        kind = getattr(nvml, "NVML_TEMPERATURE_GPU", NVML_TEMPERATURE_GPU)
        try:
            return float(nvml.nvmlDeviceGetTemperature(self._handle, kind))
        except Exception as exc:
            self.close()  # initialise again on the next read
            raise OSError(f"GPU {self.index} temperature unreadable: {_one_line(exc)}") from exc

    def _open(self) -> Any:
        if self._handle is not None:
            return self._nvml
        nvml = self._loader()
        if nvml is None:
            return None
        try:
            nvml.nvmlInit()
        except Exception as exc:
            raise OSError(f"NVML does not start: {_one_line(exc)}") from exc
        try:
            self._handle = nvml.nvmlDeviceGetHandleByIndex(self.index)
        except Exception as exc:
            nvml.nvmlShutdown()
            raise OSError(f"NVML has no GPU {self.index}: {_one_line(exc)}") from exc
        self._nvml = nvml
        return nvml


def open_sensors(
    spec: ThermalSpec,
    root: Path = Path("/"),
    *,
    live: bool = True,
    nvml_loader: NvmlLoader = load_nvml,
    runner: Runner = run_command,
) -> list[ThermalSensor]:
    """One sensor per profile entry, in the profile's order."""
    sensors: list[ThermalSensor] = []
    for sensor in spec.sensors:
        if sensor.startswith("nvml:"):
            sensors.append(NvmlSensor(sensor, live=live, nvml_loader=nvml_loader, runner=runner))
        else:
            sensors.append(FileSensor(root, sensor, spec.zone_types))
    return sensors


def read_all(sensors: Sequence[ThermalSensor]) -> list[Reading]:
    """Every sensor's readings; a sensor that raises gives one ``unreadable`` reading."""
    readings: list[Reading] = []
    for sensor in sensors:
        try:
            readings.extend(sensor.read())
        except Exception as exc:
            logger.debug("sensor %s failed", sensor.name, exc_info=True)
            readings.append(Reading(sensor.name, sensor.name, "unreadable", None, _one_line(exc)))
    return readings


def close_all(sensors: Sequence[ThermalSensor]) -> None:
    for sensor in sensors:
        try:
            sensor.close()
        except Exception as exc:
            logger.warning("closing sensor %s failed: %s", sensor.name, exc)
