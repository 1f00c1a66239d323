"""Hardware profiles, the probe and the match, on faked device roots.

The roots hold the very files a device shows (``/proc/device-tree/model``
ending in NUL, ``/etc/nv_tegra_release``, sysfs USB ids, ``/dev/apex_0``,
procfs NVIDIA GPUs); NVML and ``nvidia-smi`` are faked only because this
machine has no NVIDIA GPU.
"""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from appliance.device.catalog import load_profile, load_profiles
from appliance.device.facts import HardwareFacts
from appliance.device.match import match_profile
from appliance.device.nvidia import NVIDIA_SMI_QUERY, parse_nvidia_smi, probe_nvidia
from appliance.device.probe import probe
from appliance.device.profile import HardwareProfile, MatchRules
from appliance.device.rules import CHECKS
from appliance.errors import ConfigError

REQUIRED = (
    "jetson-orin-nano",
    "jetson-xavier-nx",
    "x86-nvidia-t4",
    "x86-nvidia",
    "rpi4-coral-usb",
    "rpi5-coral",
    "rpi5-cpu",
    "x86-cpu",
)


@dataclass
class FakeDevice:
    """Writes the files a device shows under ``root``; every method returns ``self``."""

    root: Path

    def write(self, rel: str, text: str | bytes) -> FakeDevice:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return self

    def base(self, arch: str, cpus: int = 4, memory_kb: int = 8_000_000) -> FakeDevice:
        cpuinfo = "".join(f"processor\t: {i}\nBogoMIPS\t: 108.00\n\n" for i in range(cpus))
        self.write("proc/cpuinfo", cpuinfo)
        self.write("proc/meminfo", f"MemTotal:       {memory_kb} kB\nMemFree:  1000 kB\n")
        return self.write("proc/sys/kernel/arch", f"{arch}\n")

    def model(self, text: str) -> FakeDevice:
        return self.write("proc/device-tree/model", text.encode() + b"\x00")

    def tegra(self, line: str = "# R36 (release), REVISION: 3.0, GCID: 36191598") -> FakeDevice:
        return self.write("etc/nv_tegra_release", line + "\n# KERNEL_VARIANT: oot\n")

    def usb(self, name: str, vendor: str, product: str) -> FakeDevice:
        self.write(f"sys/bus/usb/devices/{name}/idVendor", vendor + "\n")
        return self.write(f"sys/bus/usb/devices/{name}/idProduct", product + "\n")

    def apex(self, index: int = 0) -> FakeDevice:
        return self.write(f"dev/apex_{index}", "")

    def nvidia(self, model: str, bus: str = "0000:00:1e.0") -> FakeDevice:
        info = f"Model: \t\t {model}\nIRQ:   \t\t 40\nBus Type: \t PCIe\n"
        return self.write(f"proc/driver/nvidia/gpus/{bus}/information", info)

    def camera(self, index: int = 0, name: str = "HD Pro Webcam C920") -> FakeDevice:
        self.write(f"dev/video{index}", "")
        return self.write(f"sys/class/video4linux/video{index}/name", name + "\n")

    def drm(self, connector: str, status: str = "connected") -> FakeDevice:
        return self.write(f"sys/class/drm/{connector}/status", status + "\n")

    def gpiochip(self, index: int = 0) -> FakeDevice:
        return self.write(f"dev/gpiochip{index}", "")

    def thermal(self, zone: int, millidegrees: int, base: str = "sys/class/thermal") -> FakeDevice:
        return self.write(f"{base}/thermal_zone{zone}/temp", f"{millidegrees}\n")


def rpi4_coral(root: Path) -> FakeDevice:
    return (
        FakeDevice(root)
        .base("aarch64")
        .model("Raspberry Pi 4 Model B Rev 1.4")
        .usb("1-1", "1d6b", "0002")
        .usb("2-2", "18d1", "9302")
    )


def _rpi5(root: Path) -> FakeDevice:
    return FakeDevice(root).base("aarch64").model("Raspberry Pi 5 Model B Rev 1.0")


DEVICES: dict[str, Any] = {
    "rpi4-coral-usb": rpi4_coral,
    "rpi4-coral-usb-no-firmware": lambda r: (
        FakeDevice(r)
        .base("aarch64")
        .model("Raspberry Pi 4 Model B Rev 1.4")
        .usb("2-1", "1a6e", "089a")
    ),
    "rpi4-cpu": lambda r: FakeDevice(r).base("aarch64").model("Raspberry Pi 4 Model B Rev 1.5"),
    "rpi5-coral-usb": lambda r: _rpi5(r).usb("3-1", "18d1", "9302"),
    "rpi5-coral-pcie": lambda r: _rpi5(r).apex(0),
    "rpi5-cpu": _rpi5,
    "jetson-orin-nano": lambda r: (
        FakeDevice(r).base("aarch64").model("NVIDIA Jetson Orin Nano Developer Kit").tegra()
    ),
    "jetson-xavier-nx": lambda r: (
        FakeDevice(r)
        .base("aarch64")
        .model("NVIDIA Jetson Xavier NX Developer Kit")
        .tegra("# R35 (release), REVISION: 4.1")
    ),
    "x86-nvidia-t4": lambda r: FakeDevice(r).base("x86_64", 16, 64_000_000).nvidia("Tesla T4"),
    "x86-nvidia": lambda r: FakeDevice(r).base("x86_64").nvidia("NVIDIA GeForce RTX 3060"),
    "x86-cpu": lambda r: FakeDevice(r).base("x86_64"),
}

EXPECTED = {
    "rpi4-coral-usb": ("rpi4-coral-usb", ["'Raspberry Pi 4 Model B Rev 1.4'", "(18d1:9302)"]),
    "rpi4-coral-usb-no-firmware": ("rpi4-coral-usb", ["(1a6e:089a)"]),
    "rpi4-cpu": ("rpi4-cpu", ["'Raspberry Pi 4 Model B Rev 1.5'"]),
    "rpi5-coral-usb": ("rpi5-coral", ["'Raspberry Pi 5 Model B Rev 1.0'", "USB 18d1:9302"]),
    "rpi5-coral-pcie": ("rpi5-coral", ["/dev/apex_0"]),
    "rpi5-cpu": ("rpi5-cpu", ["'Raspberry Pi 5 Model B Rev 1.0'"]),
    "jetson-orin-nano": ("jetson-orin-nano", ["Orin Nano Developer Kit", "L4T release"]),
    "jetson-xavier-nx": ("jetson-xavier-nx", ["Xavier NX Developer Kit", "R35"]),
    "x86-nvidia-t4": ("x86-nvidia-t4", ["'Tesla T4'", "x86_64"]),
    "x86-nvidia": ("x86-nvidia", ["'NVIDIA GeForce RTX 3060'"]),
    "x86-cpu": ("x86-cpu", ["nothing recognisable found", "x86-cpu is the fallback"]),
}


@pytest.fixture(scope="module")
def profiles() -> dict[str, HardwareProfile]:
    return load_profiles()


def _no_live(*_: Any) -> Any:
    raise AssertionError("a faked root must not ask the running machine")


def fake_probe(root: Path) -> HardwareFacts:
    """Probe a faked root; NVML, nvidia-smi and uname must not be asked."""
    return probe(root, machine=lambda: "unknown", nvml_loader=_no_live, runner=_no_live)


def test_profiles_load_and_cover_the_required_devices(
    profiles: dict[str, HardwareProfile],
) -> None:
    assert set(REQUIRED) <= set(profiles)
    assert profiles["x86-cpu"].fallback
    for profile in profiles.values():
        assert profile.backends
        assert set(profile.models.by_role()) == {"detector", "landmarks", "blendshapes", "swapper"}
        assert profile.thermal.warm_c < profile.thermal.hot_c < profile.thermal.critical_c


def test_every_match_rule_has_a_check() -> None:
    assert set(MatchRules.model_fields) == set(CHECKS)


@pytest.mark.parametrize("device", sorted(DEVICES))
def test_probe_and_match_on_faked_roots(
    device: str, profiles: dict[str, HardwareProfile], tmp_path: Path
) -> None:
    DEVICES[device](tmp_path)
    result = match_profile(profiles, fake_probe(tmp_path))
    name, needles = EXPECTED[device]
    assert result.profile.name == name, result.reason
    for needle in needles:
        assert needle in result.reason, result.reason
    assert not result.overridden


def test_rpi4_coral_reason_reads_as_words(
    profiles: dict[str, HardwareProfile], tmp_path: Path
) -> None:
    result = match_profile(profiles, fake_probe(rpi4_coral(tmp_path).root))
    assert result.reason == (
        "device-tree model 'Raspberry Pi 4 Model B Rev 1.4' and a Coral USB accelerator (18d1:9302)"
    )


def test_probe_reads_facts_under_the_root(tmp_path: Path) -> None:
    rpi4_coral(tmp_path).apex(0)
    facts = fake_probe(tmp_path)
    assert facts.device_tree_model == "Raspberry Pi 4 Model B Rev 1.4"  # NUL stripped
    assert facts.arch == "aarch64"
    assert facts.cpu_count == 4
    assert facts.memory_mb == 8_000_000 // 1024
    assert [c.usb_id for c in facts.coral_usb] == ["18d1:9302"]
    assert facts.coral_pcie == ("/dev/apex_0",)
    assert facts.tegra_release is None and facts.nvidia_gpus == ()


def test_nothing_recognisable_falls_back_with_the_reason(
    profiles: dict[str, HardwareProfile], tmp_path: Path
) -> None:
    empty_x86 = probe(tmp_path, machine=lambda: "x86_64", nvml_loader=_no_live, runner=_no_live)
    result = match_profile(profiles, empty_x86)
    assert result.profile.name == "x86-cpu"
    assert result.reason.startswith("nothing recognisable found (no device-tree model")
    empty_arm = probe(tmp_path, machine=lambda: "aarch64", nvml_loader=_no_live, runner=_no_live)
    result = match_profile(profiles, empty_arm)
    assert result.profile.name == "generic-cpu"
    assert "nothing recognisable found" in result.reason
    assert empty_arm.cpu_count is None and empty_arm.memory_mb is None  # not the host's


def test_unknown_board_falls_back_saying_nothing_more_specific_fits(
    profiles: dict[str, HardwareProfile], tmp_path: Path
) -> None:
    FakeDevice(tmp_path).base("aarch64").model("Pine64 RockPro64 v2.1")
    result = match_profile(profiles, fake_probe(tmp_path))
    assert result.profile.name == "generic-cpu"
    assert "no specific profile fits" in result.reason
    assert "'Pine64 RockPro64 v2.1'" in result.reason


def test_profile_override_says_so(profiles: dict[str, HardwareProfile], tmp_path: Path) -> None:
    FakeDevice(tmp_path).base("x86_64")
    result = match_profile(profiles, fake_probe(tmp_path), override="rpi5-cpu")
    assert result.profile.name == "rpi5-cpu" and result.overridden
    assert "chosen with --profile rpi5-cpu" in result.reason
    assert "device_tree_model_contains='Raspberry Pi 5' but no device-tree model" in result.reason
    assert "the probe alone would pick x86-cpu" in result.reason
    with pytest.raises(ConfigError, match=r"unknown hardware profile 'rpi9' \(known: .*x86-cpu"):
        match_profile(profiles, fake_probe(tmp_path), override="rpi9")


def test_no_fallback_and_no_match_is_a_clear_error(
    profiles: dict[str, HardwareProfile], tmp_path: Path
) -> None:
    FakeDevice(tmp_path).base("x86_64")
    only_pi = {"rpi5-cpu": profiles["rpi5-cpu"]}
    with pytest.raises(ConfigError, match="no hardware profile matches this device"):
        match_profile(only_pi, fake_probe(tmp_path))


# NVIDIA: NVML when importable, else nvidia-smi, else procfs (faked: no GPU here).


def _fake_nvml(names: Sequence[str | bytes], fail: bool = False) -> SimpleNamespace:
    calls: list[str] = []

    def init() -> None:
        calls.append("init")
        if fail:
            raise RuntimeError("NVML Shared Library Not Found")

    return SimpleNamespace(
        calls=calls,
        nvmlInit=init,
        nvmlShutdown=lambda: calls.append("shutdown"),
        nvmlDeviceGetCount=lambda: len(names),
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: names[h],
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(total=16 * 1024**3),
    )


def test_nvml_is_asked_first_on_a_live_probe(
    profiles: dict[str, HardwareProfile], tmp_path: Path
) -> None:
    FakeDevice(tmp_path).base("x86_64")
    nvml = _fake_nvml([b"Tesla T4"])  # older nvidia-ml-py returns bytes
    facts = probe(tmp_path, live=True, nvml_loader=lambda: nvml, runner=_no_live)
    assert [(g.name, g.memory_mb, g.source) for g in facts.nvidia_gpus] == [
        ("Tesla T4", 16384, "nvml")
    ]
    assert nvml.calls == ["init", "shutdown"]
    assert match_profile(profiles, facts).profile.name == "x86-nvidia-t4"


def test_nvidia_smi_when_nvml_is_absent_or_fails(tmp_path: Path) -> None:
    commands: list[Sequence[str]] = []

    def runner(command: Sequence[str]) -> str:
        commands.append(command)
        return "Tesla T4, 15360 MiB\nNVIDIA A10, 23028 MiB\n"

    gpus, notes = probe_nvidia(tmp_path, live=True, nvml_loader=lambda: None, runner=runner)
    assert [(g.name, g.memory_mb) for g in gpus] == [("Tesla T4", 15360), ("NVIDIA A10", 23028)]
    assert commands == [NVIDIA_SMI_QUERY] and notes == []
    failing = _fake_nvml(["x"], fail=True)
    gpus, notes = probe_nvidia(tmp_path, live=True, nvml_loader=lambda: failing, runner=runner)
    assert gpus[0].source == "nvidia-smi"
    assert notes == ["NVML failed: NVML Shared Library Not Found"]


def test_without_nvml_or_nvidia_smi_procfs_is_read(tmp_path: Path) -> None:
    FakeDevice(tmp_path).nvidia("Tesla T4")

    def no_binary(command: Sequence[str]) -> str:
        raise FileNotFoundError(command[0])

    gpus, notes = probe_nvidia(tmp_path, live=True, nvml_loader=lambda: None, runner=no_binary)
    assert [(g.name, g.source) for g in gpus] == [("Tesla T4", "procfs")] and notes == []

    def broken(command: Sequence[str]) -> str:
        raise subprocess.CalledProcessError(9, list(command), "", "driver mismatch")

    gpus, notes = probe_nvidia(tmp_path, live=True, nvml_loader=lambda: None, runner=broken)
    assert gpus[0].source == "procfs" and notes[0].startswith("nvidia-smi failed")


def test_parse_nvidia_smi_tolerates_missing_memory() -> None:
    assert [(g.name, g.memory_mb) for g in parse_nvidia_smi("Tesla T4, [N/A]\n\n")] == [
        ("Tesla T4", None)
    ]


def test_this_machine_probes_and_matches(profiles: dict[str, HardwareProfile]) -> None:
    facts = probe()
    result = match_profile(profiles, facts)
    assert result.facts.arch == platform.machine()
    if platform.machine() == "x86_64" and not facts.recognisable():
        assert result.profile.name == "x86-cpu"
        assert "nothing recognisable found" in result.reason


# Broken profile files: the file, the key and the value are named.


def _good_profile() -> dict[str, Any]:
    path = Path(__file__).resolve().parent.parent / "hardware_profiles" / "rpi4-coral-usb.yaml"
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def _write(tmp_path: Path, data: dict[str, Any] | str, name: str = "rpi4-coral-usb") -> Path:
    path = tmp_path / f"{name}.yaml"
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def test_good_profile_copy_loads(tmp_path: Path) -> None:
    profile = load_profile(_write(tmp_path, _good_profile()))
    assert profile.capture.size == (640, 480)
    assert profile.gpio is not None and profile.gpio.pins["button"] == 27


def test_bad_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "name: rpi4-coral-usb\nmatch: [unclosed\n")
    with pytest.raises(ConfigError) as info:
        load_profile(path)
    message = str(info.value)
    assert f"cannot read hardware profile {path}" in message
    assert "line 3" in message and "\n" not in message


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        (
            {"match": {"device_tree_model_contains": "Raspberry Pi 4", "colour": "red"}},
            ["match.colour='red'", "Extra inputs are not permitted"],
        ),
        ({"target_fps": "fast"}, ["target_fps='fast'", "valid number"]),
        ({"capture": {"fps": "thirty"}}, ["capture.fps='thirty'"]),
        ({"backends": ["edgetpu", "coral-magic"]}, ["backends.1='coral-magic'"]),
        ({"backends": ["edgetpu", "edgetpu"]}, ["backends=", "listed twice: edgetpu"]),
        ({"gpio": {"numbering": "bcm", "pins": {"fan": 40}}}, ["fan=40 is outside bcm"]),
        (
            {"models": {"detector": "", "landmarks": "x", "blendshapes": "x", "swapper": "x"}},
            ["models.detector=''"],
        ),
        ({"thermal": {"warm_c": 80, "hot_c": 70, "critical_c": 90}}, ["thresholds must rise"]),
        ({"capture": {"device": "video0"}}, ["capture.device='video0'"]),
        ({"frobnicate": 1}, ["frobnicate=1", "Extra inputs"]),
    ],
)
def test_broken_profile_names_file_key_and_value(
    tmp_path: Path, change: dict[str, Any], needles: list[str]
) -> None:
    path = _write(tmp_path, {**_good_profile(), **change})
    with pytest.raises(ConfigError) as info:
        load_profile(path)
    message = str(info.value)
    assert message.startswith(f"invalid hardware profile {path}: "), message
    for needle in needles:
        assert needle in message, message


def test_name_must_match_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, _good_profile(), name="pi4")
    with pytest.raises(ConfigError, match=r"name='rpi4-coral-usb': must equal the file name 'pi4'"):
        load_profile(path)


def test_one_broken_file_stops_the_whole_load(tmp_path: Path) -> None:
    _write(tmp_path, _good_profile())
    broken = _write(
        tmp_path, {**_good_profile(), "name": "x86-cpu", "fallback": "maybe"}, "x86-cpu"
    )
    with pytest.raises(ConfigError, match=rf"{broken}: fallback='maybe'"):
        load_profiles(tmp_path)
    broken.unlink()
    with pytest.raises(ConfigError, match="no fallback profile"):
        load_profiles(tmp_path)
    with pytest.raises(ConfigError, match="no hardware profiles"):
        load_profiles(tmp_path / "empty")
