"""The schema of a hardware profile (``hardware_profiles/*.yaml``).

A profile is data: how to recognise the device (``match``), the backend
order, the model variant per role, capture, display, thermal sensors,
thresholds and fan curve, GPIO pins and the frame rate to hold. Every model
is frozen and rejects unknown keys, so a typo in a profile is an error, not a
silent default.
"""

from __future__ import annotations

import itertools
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from appliance.backend_names import BackendName

Arch = Literal["x86_64", "aarch64", "armv7l"]
Connector = Literal["hdmi", "dsi", "dp", "any", "headless"]
CameraKind = Literal["v4l2", "picamera2", "gstreamer-csi"]
DisplayKind = Literal["framebuffer", "sdl", "none"]
Extra = Literal["cpu", "gpu", "pi", "jetson", "display"]

ROLES = ("detector", "landmarks", "blendshapes", "swapper")
BCM_PINS = range(0, 28)
BOARD_PINS = range(1, 41)

_RESOLUTION = r"^\d{2,5}x\d{2,5}$"
_MODEL_NAME = r"^[A-Za-z0-9_.-]+$"
_PIN_NAME = r"^[a-z][a-z0-9_]*$"
_NVML_SENSOR = re.compile(r"^nvml:\d+$")


def parse_resolution(text: str) -> tuple[int, int]:
    """``"640x480"`` -> ``(640, 480)`` (the schema already checked the form)."""
    width, height = text.split("x")
    return int(width), int(height)


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MatchRules(_Frozen):
    """Facts that must all hold for the profile to match; unset rules are not checked."""

    device_tree_model_contains: str | None = Field(
        None, min_length=1, description="Text in /proc/device-tree/model (case-insensitive)."
    )
    tegra_release: bool | None = Field(
        None, description="/etc/nv_tegra_release exists (an NVIDIA Jetson running L4T)."
    )
    tegra_release_contains: str | None = Field(
        None, min_length=1, description="Text in the first line of /etc/nv_tegra_release."
    )
    nvidia_gpu: bool | None = Field(None, description="A discrete NVIDIA GPU is visible.")
    nvidia_gpu_name_contains: str | None = Field(
        None, min_length=1, description="Text in an NVIDIA GPU's name (case-insensitive)."
    )
    coral: bool | None = Field(None, description="Any Coral accelerator, USB or PCIe.")
    coral_usb: bool | None = Field(None, description="A Coral USB accelerator is plugged in.")
    coral_pcie: bool | None = Field(None, description="A PCIe/M.2 Coral shows as /dev/apex_*.")
    arch: Arch | None = Field(None, description="CPU architecture (uname -m).")
    min_memory_mb: int | None = Field(None, ge=1, description="At least this much memory.")
    min_cpu_count: int | None = Field(None, ge=1, description="At least this many CPUs.")

    def rules(self) -> dict[str, Any]:
        """The rules that are set, in declaration order."""
        return {key: value for key, value in self.model_dump().items() if value is not None}


class ModelVariants(_Frozen):
    """A model name per role: a manifest name, a variant of one, or ``geometric`` (built in).

    The runtime resolves the string; the schema only checks its form.
    """

    detector: str = Field(min_length=1, pattern=_MODEL_NAME, description="Face detector.")
    landmarks: str = Field(min_length=1, pattern=_MODEL_NAME, description="Face landmarks.")
    blendshapes: str = Field(min_length=1, pattern=_MODEL_NAME, description="Blendshapes.")
    swapper: str = Field(min_length=1, pattern=_MODEL_NAME, description="Face swapper.")

    def by_role(self) -> dict[str, str]:
        return {role: str(getattr(self, role)) for role in ROLES}


class CaptureSpec(_Frozen):
    device: int | str = Field(0, description="Camera index or /dev/videoN (or a udev link).")
    resolution: str = Field("640x480", pattern=_RESOLUTION, description="Requested WxH.")
    fps: float = Field(30.0, gt=0.0, le=240.0, description="Requested frame rate.")
    fourcc: str = Field("MJPG", min_length=4, max_length=4, description="Pixel format.")
    kind: CameraKind = Field(
        "v4l2",
        description="v4l2 (USB, OpenCV), picamera2 (Raspberry Pi CSI) or gstreamer-csi "
        "(Jetson CSI through nvarguscamerasrc; device is then the sensor id).",
    )
    flip_method: int = Field(
        0, ge=0, le=7, description="gstreamer-csi only: nvvidconv flip-method (2 = rotate 180)."
    )
    required: bool = Field(
        True, description="The mirror expects a camera here (a missing one is still a warning)."
    )

    @field_validator("device")
    @classmethod
    def _device_form(cls, value: int | str) -> int | str:
        if isinstance(value, int):
            if value < 0:
                raise ValueError("a camera index must be 0 or more")
            return value
        if not value.startswith("/dev/"):
            raise ValueError("a camera device must be an index or a path under /dev/")
        return value

    @property
    def size(self) -> tuple[int, int]:
        return parse_resolution(self.resolution)


class DisplaySpec(_Frozen):
    connector: Connector = Field(
        "hdmi", description="Expected output: hdmi, dsi, dp, any, or headless (preview only)."
    )
    resolution: str = Field("1280x720", pattern=_RESOLUTION, description="Output WxH.")
    fullscreen: bool = Field(True, description="Show the mirror full screen.")
    kind: DisplayKind = Field(
        "framebuffer",
        description="framebuffer (/dev/fbN through mmap), sdl (pygame, kmsdrm) or none.",
    )
    device: str = Field(
        "/dev/fb0", pattern=r"^/dev/fb\d+$", description="framebuffer only: the device."
    )
    mirror: bool = Field(
        True,
        description="Show people mirrored; flipped at capture, so text drawn later reads right.",
    )

    @property
    def size(self) -> tuple[int, int]:
        return parse_resolution(self.resolution)


class FanStep(_Frozen):
    """One step of a fan curve: at ``at_c`` and above, run at ``duty``."""

    at_c: float = Field(gt=0.0, lt=150.0, description="Temperature the step starts at.")
    duty: float = Field(gt=0.0, le=1.0, description="PWM duty cycle from 0 (off) to 1 (full).")


# The Raspberry Pi 5's own fan curve (fan_temp0..3: 50/60/67.5/75 C, speeds 75/125/175/250
# of 255), each step dropping back 5 C lower.
PI5_FAN_CURVE = (
    FanStep(at_c=50.0, duty=0.3),
    FanStep(at_c=60.0, duty=0.5),
    FanStep(at_c=67.5, duty=0.7),
    FanStep(at_c=75.0, duty=1.0),
)


class FanSpec(_Frozen):
    """The curve a PWM fan on the GPIO pin named ``fan`` follows (off below the first step)."""

    curve: tuple[FanStep, ...] = Field(
        PI5_FAN_CURVE, min_length=1, description="Steps by rising temperature (the Pi 5's own)."
    )
    hysteresis_c: float = Field(
        5.0, ge=0.0, le=30.0, description="A step is left only this far below where it starts."
    )
    pwm_hz: float = Field(100.0, gt=0.0, le=50_000.0, description="PWM frequency.")

    @model_validator(mode="after")
    def _rising(self) -> FanSpec:
        for low, high in itertools.pairwise(self.curve):
            if not low.at_c < high.at_c:
                raise ValueError(f"fan steps must rise: {low.at_c:g} C then {high.at_c:g} C")
            if high.duty < low.duty:
                raise ValueError(f"fan duty must not fall: {low.duty:g} then {high.duty:g}")
        return self


class ThermalSpec(_Frozen):
    sensors: tuple[str, ...] = Field(
        (),
        description="Sensor files in millidegrees (globs allowed, e.g. "
        "/sys/class/thermal/thermal_zone*/temp or /sys/class/apex/*/temp) or nvml:N "
        "for NVIDIA GPU N.",
    )
    zone_types: tuple[str, ...] = Field(
        (),
        description="Read only the thermal zones (thermal_zone*/) whose type is one of "
        "these (case-insensitive); empty: every zone the sensors match.",
    )
    warm_c: float = Field(gt=0.0, lt=150.0, description="NORMAL -> WARM at this or above.")
    hot_c: float = Field(gt=0.0, lt=150.0, description="WARM -> HOT at this or above.")
    critical_c: float = Field(gt=0.0, lt=150.0, description="HOT -> CRITICAL at this or above.")
    hysteresis_c: float = Field(
        5.0, ge=0.0, le=30.0, description="Step down only this far below a threshold."
    )
    hold_s: float = Field(
        30.0, ge=0.0, le=3600.0, description="...and only after staying there this long."
    )
    poll_s: float = Field(5.0, gt=0.0, le=60.0, description="Seconds between sensor reads.")
    required: bool = Field(
        True,
        description="No readable sensor is a failure (the governor runs conservatively); "
        "false: a machine without sensors runs unmonitored, with a warning.",
    )
    fan: FanSpec = Field(default_factory=FanSpec, description="The GPIO fan's curve.")

    @field_validator("sensors")
    @classmethod
    def _sensor_form(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for sensor in value:
            if not (sensor.startswith("/") or _NVML_SENSOR.match(sensor)):
                raise ValueError(f"sensor {sensor!r} must be an absolute path or nvml:N")
        return value

    @field_validator("zone_types")
    @classmethod
    def _zone_type_form(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for zone_type in value:
            if not zone_type.strip() or zone_type != zone_type.strip():
                raise ValueError(f"zone type {zone_type!r} must be a non-empty word")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> ThermalSpec:
        if not self.warm_c < self.hot_c < self.critical_c:
            raise ValueError(
                f"thresholds must rise: warm_c {self.warm_c} < hot_c {self.hot_c} "
                f"< critical_c {self.critical_c}"
            )
        return self


class GpioSpec(_Frozen):
    numbering: Literal["bcm", "board"] = Field(
        "bcm", description="bcm: Broadcom GPIO numbers 0-27; board: header pins 1-40."
    )
    pins: dict[str, int] = Field(
        default_factory=dict,
        description="Named pins: status_led, button, pir (motion sensor), fan; e.g. button: 27.",
    )
    button_hold_s: float = Field(
        2.0, gt=0.0, le=10.0, description="A press this long is a long press (swapping on/off)."
    )
    motion_idle_s: float = Field(
        120.0,
        gt=0.0,
        le=86400.0,
        description="With no motion for this long the display dims and processing idles.",
    )

    @model_validator(mode="after")
    def _pins_valid(self) -> GpioSpec:
        allowed = BCM_PINS if self.numbering == "bcm" else BOARD_PINS
        seen: dict[int, str] = {}
        for name, pin in self.pins.items():
            if not re.match(_PIN_NAME, name):
                raise ValueError(f"pin name {name!r} must be lower_case_with_underscores")
            if pin not in allowed:
                raise ValueError(
                    f"pin {name}={pin} is outside {self.numbering} numbering "
                    f"({allowed.start}-{allowed.stop - 1})"
                )
            if pin in seen:
                raise ValueError(f"pins {seen[pin]} and {name} both use {pin}")
            seen[pin] = name
        return self


class InstallSpec(_Frozen):
    """How ``mirror provision`` builds the device's venv: the project's extras and the
    system site packages."""

    extras: tuple[Extra, ...] = Field(
        (),
        description="The project's extras this device needs: cpu (onnxruntime on the CPU), "
        "gpu (onnxruntime-gpu), pi (lgpio, pygame-ce, numpy 1.x for Debian 12's picamera2), "
        "jetson (numpy below 2 for JetPack's cv2; cv2 and TensorRT from JetPack, NVIDIA's "
        "onnxruntime-gpu from the bundle's vendor files), display (pygame-ce).",
    )
    system_site_packages: bool = Field(
        False,
        description="The venv sees the OS's Python packages: Debian's python3-picamera2 on a "
        "Raspberry Pi, JetPack's cv2 (GStreamer), onnxruntime-gpu and TensorRT on a Jetson.",
    )

    @field_validator("extras")
    @classmethod
    def _extras_form(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        repeated = sorted({name for name in value if value.count(name) > 1})
        if repeated:
            raise ValueError(f"extra(s) listed twice: {', '.join(repeated)}")
        if "cpu" in value and "gpu" in value:
            # onnxruntime shadows onnxruntime-gpu: CUDA and TensorRT would vanish
            raise ValueError("cpu and gpu exclude each other (onnxruntime vs onnxruntime-gpu)")
        return value


class HardwareProfile(_Frozen):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Equals the file name stem.")
    description: str = Field(min_length=1, description="The device in words.")
    priority: int = Field(0, description="Breaks ties between equally specific matches.")
    fallback: bool = Field(
        False, description="Matches only when no specific profile does (the CPU fallbacks)."
    )
    match: MatchRules = Field(default_factory=MatchRules, description="How to recognise it.")
    backends: tuple[BackendName, ...] = Field(
        min_length=1, description="Inference backends to try, best first."
    )
    models: ModelVariants
    capture: CaptureSpec = Field(default_factory=CaptureSpec)
    display: DisplaySpec = Field(default_factory=DisplaySpec)
    thermal: ThermalSpec
    gpio: GpioSpec | None = Field(None, description="GPIO pins; absent where there are none.")
    target_fps: float = Field(gt=0.0, le=240.0, description="Output rate to hold.")
    install: InstallSpec = Field(
        default_factory=InstallSpec, description="The device's venv (mirror provision)."
    )
    unsupported: str | None = Field(
        None,
        min_length=1,
        description="Why the mirror cannot run on this device: the profile still matches "
        "(the device is recognised, not mistaken for a CPU-only one), and doctor, run and "
        "provision refuse it with this reason.",
    )

    @field_validator("backends")
    @classmethod
    def _no_repeats(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        repeated = sorted({name for name in value if value.count(name) > 1})
        if repeated:
            raise ValueError(f"backend(s) listed twice: {', '.join(repeated)}")
        return value

    @model_validator(mode="after")
    def _install_has_sdl(self) -> HardwareProfile:
        # SDL on KMS needs pygame-ce (the display extra; the pi extra brings it too).
        explicit = "install" in self.model_fields_set
        sdl_extras = {"display", "pi"} & set(self.install.extras)
        if explicit and self.display.kind == "sdl" and not sdl_extras:
            raise ValueError("display kind sdl needs the display (or pi) extra in install.extras")
        return self
