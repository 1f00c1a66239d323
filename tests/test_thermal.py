"""Thermal sensors on faked device roots: Pi, Jetson (with -256 C), NVML, Coral apex, replay.

The roots hold the very files a device shows (``thermal_zone*/temp`` in
millidegrees with its ``type``, ``/sys/class/apex/apex_0/temp``); NVML is a
fake module only because this machine has no NVIDIA GPU.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from appliance.device.catalog import load_profiles
from appliance.device.profile import HardwareProfile, ThermalSpec
from appliance.doctor.thermal_check import read_sensors
from appliance.errors import ConfigError
from appliance.thermal.replay import ReplaySensor, TracePoint, parse_trace
from appliance.thermal.sensors import (
    FileSensor,
    NvmlSensor,
    Reading,
    open_sensors,
    read_all,
)

DATA = Path(__file__).parent / "data" / "thermal"
JETSON_BASE = "sys/devices/virtual/thermal"


@pytest.fixture(scope="module")
def profiles() -> dict[str, HardwareProfile]:
    return load_profiles()


def zone(
    root: Path,
    index: int,
    millidegrees: int | str,
    kind: str | None = None,
    base: str = "sys/class/thermal",
) -> Path:
    folder = root / base / f"thermal_zone{index}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "temp").write_text(f"{millidegrees}\n", encoding="ascii")
    if kind is not None:
        (folder / "type").write_text(f"{kind}\n", encoding="ascii")
    return folder / "temp"


def summary(readings: Sequence[Reading]) -> list[tuple[str, str, float | None]]:
    return [(r.path, r.status, r.temperature_c) for r in readings]


# ---- sysfs zones ---------------------------------------------------------------------------


def test_pi_zone0_in_millidegrees(profiles: dict[str, HardwareProfile], tmp_path: Path) -> None:
    zone(tmp_path, 0, 52_123, "cpu-thermal")
    readings = read_all(open_sensors(profiles["rpi5-cpu"].thermal, tmp_path))
    assert summary(readings) == [("/sys/class/thermal/thermal_zone0/temp", "ok", 52.123)]


def test_jetson_zones_chosen_by_type_and_minus_256_is_offline(
    profiles: dict[str, HardwareProfile], tmp_path: Path
) -> None:
    kinds = ["cpu-thermal", "gpu-thermal", "cv0-thermal", "soc0-thermal", "tj-thermal"]
    temps = [61_500, 58_000, -256_000, 57_250, 62_000]
    for index, (kind, temp) in enumerate(zip(kinds, temps, strict=True)):
        zone(tmp_path, index, temp, kind, JETSON_BASE)
    zone(tmp_path, 5, 100_000, "PMIC-Die", JETSON_BASE)
    spec = profiles["jetson-orin-nano"].thermal
    chosen = summary(read_all(open_sensors(spec, tmp_path)))
    assert [(p.rsplit("/", 2)[1], s, t) for p, s, t in chosen] == [
        ("thermal_zone0", "ok", 61.5),
        ("thermal_zone1", "ok", 58.0),
        ("thermal_zone3", "ok", 57.25),
        ("thermal_zone4", "ok", 62.0),
    ]
    every = FileSensor(tmp_path, spec.sensors[0]).read()  # no type filter: the offline zone shows
    offline = [r for r in every if r.status == "offline"]
    assert len(offline) == 1 and offline[0].temperature_c is None
    assert "-256 C" in offline[0].detail and offline[0].path.endswith("thermal_zone2/temp")


def test_zone_types_that_match_nothing_say_what_was_found(tmp_path: Path) -> None:
    zone(tmp_path, 0, 40_000, "acpitz")
    zone(tmp_path, 1, 45_000, "iwlwifi_1")
    sensor = FileSensor(tmp_path, "/sys/class/thermal/thermal_zone*/temp", ["x86_pkg_temp"])
    (reading,) = sensor.read()
    assert reading.status == "missing" and reading.temperature_c is None
    assert reading.detail == "no zone of type x86_pkg_temp (found acpitz, iwlwifi_1)"
    case_blind = FileSensor(tmp_path, "/sys/class/thermal/thermal_zone*/temp", ["ACPITZ"])
    assert summary(case_blind.read()) == [("/sys/class/thermal/thermal_zone0/temp", "ok", 40.0)]


def test_no_file_is_missing(tmp_path: Path) -> None:
    (reading,) = FileSensor(tmp_path, "/sys/class/thermal/thermal_zone0/temp").read()
    assert (reading.status, reading.detail) == ("missing", "no file")


@pytest.mark.parametrize(
    ("content", "needle"),
    [("", "invalid literal"), ("hot\n", "invalid literal"), (b"\xff\xfe", "codec")],
)
def test_unreadable_file_is_reported_never_cool(
    tmp_path: Path, content: str | bytes, needle: str
) -> None:
    path = zone(tmp_path, 0, 0)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="ascii")
    (reading,) = FileSensor(tmp_path, "/sys/class/thermal/thermal_zone0/temp").read()
    assert reading.status == "unreadable" and reading.temperature_c is None
    assert needle in reading.detail


def test_a_directory_where_the_file_should_be_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "sys/class/thermal/thermal_zone0/temp").mkdir(parents=True)
    (reading,) = FileSensor(tmp_path, "/sys/class/thermal/thermal_zone0/temp").read()
    assert reading.status == "unreadable" and "directory" in reading.detail


def test_a_sensor_that_raises_reads_as_unreadable() -> None:
    class Broken:
        name = "broken"

        def read(self) -> list[Reading]:
            raise RuntimeError("bus error\n  at 0x40")

        def close(self) -> None:
            pass

    (reading,) = read_all([Broken()])
    assert (reading.status, reading.detail) == ("unreadable", "bus error at 0x40")


# ---- Coral -----------------------------------------------------------------------------------


def test_pcie_coral_apex_temperature(profiles: dict[str, HardwareProfile], tmp_path: Path) -> None:
    zone(tmp_path, 0, 55_000, "cpu-thermal")
    apex = tmp_path / "sys/class/apex/apex_0"
    apex.mkdir(parents=True)
    (apex / "temp").write_text("48250\n", encoding="ascii")
    (apex / "trip_point0_temp").write_text("85000\n", encoding="ascii")
    readings = read_all(open_sensors(profiles["rpi5-coral"].thermal, tmp_path))
    assert summary(readings) == [
        ("/sys/class/thermal/thermal_zone0/temp", "ok", 55.0),
        ("/sys/class/apex/apex_0/temp", "ok", 48.25),
    ]


def test_usb_coral_has_no_apex_file_and_that_is_missing_not_a_reading(
    profiles: dict[str, HardwareProfile], tmp_path: Path
) -> None:
    zone(tmp_path, 0, 55_000)
    statuses = [r.status for r in read_all(open_sensors(profiles["rpi5-coral"].thermal, tmp_path))]
    assert statuses == ["ok", "missing"]


# ---- NVML ------------------------------------------------------------------------------------


class FakeNvml:
    """The few ``pynvml`` calls the sensor makes, counting init/shutdown."""

    NVML_TEMPERATURE_GPU = 0

    def __init__(self, temperatures: list[float], fail_on: str = "") -> None:
        self.temperatures = temperatures
        self.fail_on = fail_on
        self.inits = self.shutdowns = 0

    def _maybe_fail(self, call: str) -> None:
        if call == self.fail_on:
            raise RuntimeError(f"NVMLError: {call} failed")

    def nvmlInit(self) -> None:  # noqa: N802 (pynvml's names)
        self._maybe_fail("init")
        self.inits += 1

    def nvmlShutdown(self) -> None:  # noqa: N802 (pynvml's names)
        self.shutdowns += 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:  # noqa: N802 (pynvml's names)
        self._maybe_fail("handle")
        return SimpleNamespace(index=index)

    def nvmlDeviceGetTemperature(self, handle: Any, kind: int) -> int:  # noqa: N802 (pynvml's names)
        assert kind == self.NVML_TEMPERATURE_GPU
        self._maybe_fail("temperature")
        return int(self.temperatures.pop(0))


def _no_smi(_: Sequence[str]) -> str:
    raise AssertionError("nvidia-smi must not be asked when NVML is there")


def test_nvml_reads_and_stays_initialised_until_close() -> None:
    nvml = FakeNvml([64, 66])
    sensor = NvmlSensor("nvml:0", nvml_loader=lambda: nvml, runner=_no_smi)
    assert summary(sensor.read() + sensor.read()) == [
        ("nvml:0", "ok", 64.0),
        ("nvml:0", "ok", 66.0),
    ]
    assert (nvml.inits, nvml.shutdowns) == (1, 0)
    sensor.close()
    assert nvml.shutdowns == 1


def test_nvml_through_the_real_loader_with_a_faked_module(
    monkeypatch: pytest.MonkeyPatch, profiles: dict[str, HardwareProfile], tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([71]))
    sensors = open_sensors(profiles["x86-nvidia-t4"].thermal, tmp_path, runner=_no_smi)
    assert summary(read_all(sensors)) == [
        ("nvml:0", "ok", 71.0),
        ("/sys/class/thermal/thermal_zone*/temp", "missing", None),
    ]


@pytest.mark.parametrize(
    ("fail_on", "needle"),
    [("init", "NVML does not start"), ("handle", "no GPU 0"), ("temperature", "unreadable")],
)
def test_nvml_errors_are_unreadable(fail_on: str, needle: str) -> None:
    nvml = FakeNvml([60], fail_on=fail_on)
    (reading,) = NvmlSensor("nvml:0", nvml_loader=lambda: nvml, runner=_no_smi).read()
    assert reading.status == "unreadable" and needle in reading.detail
    assert "NVMLError" in reading.detail


def test_nvml_after_an_error_starts_again() -> None:
    nvml = FakeNvml([60, 61], fail_on="temperature")
    sensor = NvmlSensor("nvml:0", nvml_loader=lambda: nvml, runner=_no_smi)
    assert sensor.read()[0].status == "unreadable"
    nvml.fail_on = ""
    assert sensor.read()[0].temperature_c == 60.0
    assert (nvml.inits, nvml.shutdowns) == (2, 1)


def test_without_pynvml_nvidia_smi_then_missing() -> None:
    asked: list[Sequence[str]] = []

    def smi(command: Sequence[str]) -> str:
        asked.append(command)
        return "63\n"

    (reading,) = NvmlSensor("nvml:1", nvml_loader=lambda: None, runner=smi).read()
    assert (reading.status, reading.temperature_c) == ("ok", 63.0)
    assert "--id=1" in asked[0]

    def absent(_: Sequence[str]) -> str:
        raise FileNotFoundError("nvidia-smi")

    (reading,) = NvmlSensor("nvml:0", nvml_loader=lambda: None, runner=absent).read()
    assert reading.status == "missing"


def test_nvml_is_not_asked_for_another_root() -> None:
    def never() -> Any:
        raise AssertionError("not live: NVML must not load")

    (reading,) = NvmlSensor("nvml:0", live=False, nvml_loader=never).read()
    assert reading.status == "unreadable" and "running machine" in reading.detail


# ---- doctor ----------------------------------------------------------------------------------


def test_doctor_reads_through_the_same_sensors(tmp_path: Path) -> None:
    zone(tmp_path, 0, 47_000, "x86_pkg_temp")
    zone(tmp_path, 1, "", "iwlwifi_1")
    spec = ThermalSpec(
        sensors=("/sys/class/thermal/thermal_zone*/temp", "nvml:0"),
        zone_types=("x86_pkg_temp",),
        warm_c=70,
        hot_c=80,
        critical_c=90,
    )
    report = read_sensors(tmp_path, spec, live=False)
    assert [(s.path, s.status, s.temperature_c) for s in report.sensors] == [
        ("/sys/class/thermal/thermal_zone0/temp", "ok", 47.0),
        ("nvml:0", "unreadable", None),
    ]


# ---- replay ----------------------------------------------------------------------------------


class Clock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_replay_trace_from_csv_follows_the_clock() -> None:
    clock = Clock()
    sensor = ReplaySensor.from_csv(DATA / "dropout.csv", clock)
    seen = []
    for elapsed in (0, 29, 30, 60, 89, 90, 1000):
        clock.now = 100.0 + elapsed
        (reading,) = sensor.read()
        seen.append((reading.status, reading.temperature_c))
    assert seen == [
        ("ok", 50.0),
        ("ok", 50.0),
        ("ok", 50.5),
        ("unreadable", None),
        ("unreadable", None),
        ("ok", 50.0),
        ("ok", 49.5),
    ]
    assert sensor.name == "replay:dropout.csv"


def test_replay_ramp_file_parses() -> None:
    trace = parse_trace((DATA / "ramp.csv").read_text(encoding="utf-8"))
    assert trace[0] == TracePoint(0.0, 40.0) and max(p.celsius or 0 for p in trace) == 90.0


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("seconds,celsius\n0,40\n0,41\n", "line 3: seconds must rise"),
        ("0,40\nten,41\n", "line 2: expected numbers, got 'ten,41'"),
        ("0,40,1\n", "line 1: expected seconds,celsius"),
        ("# nothing\n", "no seconds,celsius rows"),
    ],
)
def test_bad_trace_names_the_line(text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        parse_trace(text, "trace.csv")


def test_unreadable_trace_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read thermal trace"):
        ReplaySensor.from_csv(tmp_path / "absent.csv", Clock())
