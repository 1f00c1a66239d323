"""The schema of ``mirror doctor --json``: one frozen model per section.

``DoctorReport.model_validate(json.loads(text))`` validates a report and
``doctor_json_schema()`` gives the JSON Schema for other readers (the admin
page, fleet tooling). Bump ``SCHEMA_VERSION`` on any incompatible change.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from appliance.device.facts import HardwareFacts

SCHEMA_VERSION: Final = 1

ModelStatus = Literal["ok", "missing", "bad-hash"]
RoleStatus = Literal["ok", "missing", "bad-hash", "variant", "builtin", "not-installed"]
SensorStatus = Literal["ok", "offline", "missing", "unreadable"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CandidateReport(_Frozen):
    name: str
    matched: bool
    fallback: bool
    rules: int = Field(description="How many rules the profile has (its specificity).")
    priority: int
    failed: list[str] = Field(description="Rules that did not hold, with what was seen.")


class ProfileReport(_Frozen):
    name: str
    description: str
    reason: str = Field(description="Why this profile, in words.")
    overridden: bool = Field(description="Chosen with --profile.")
    target_fps: float
    candidates: list[CandidateReport]


class AttemptReport(_Frozen):
    name: str
    ok: bool
    reason: str


class SessionReport(_Frozen):
    role: str
    file: str = Field(description="The ONNX file the role runs.")
    asked: list[str] = Field(description="The execution providers asked for, best first.")
    providers: list[str] = Field(
        description="What onnxruntime's session runs it on (session.get_providers()); "
        "empty when the session could not be made (see error)."
    )
    error: str | None = Field(None, description="Why no session could be made.")


class BackendsReport(_Frozen):
    order: list[str] = Field(description="The profile's order, best first.")
    chosen: str | None = Field(description="The backend in use; null when none works.")
    attempts: list[AttemptReport]
    fallbacks: list[str] = Field(description="Recorded fallbacks: subject: wanted -> used.")
    sessions: list[SessionReport] = Field(
        default_factory=list,
        description="Each role that runs an ONNX file on onnxruntime: the providers its "
        "session really got.",
    )


class ModelFileReport(_Frozen):
    name: str
    path: str
    status: ModelStatus
    expected_sha256: str
    actual_sha256: str | None


class RoleReport(_Frozen):
    role: str
    model: str = Field(description="The profile's model (or variant) for the role.")
    status: RoleStatus
    detail: str


class ModelsReport(_Frozen):
    cache_dir: str
    files: list[ModelFileReport]
    roles: list[RoleReport]


class InstallReport(_Frozen):
    extras: list[str] = Field(description="The project's extras the profile asks for.")
    missing: list[str] = Field(description="Requirements of those extras not met here.")
    conflicts: list[str] = Field(description="Distributions that must not be installed together.")
    system_site_packages_wanted: bool
    system_site_packages: bool = Field(description="Whether this venv sees the OS's packages.")
    command: str | None = Field(description="The command that installs what is missing.")
    vendor: list[str] = Field(
        default_factory=list,
        description="Vendor parts the profile's accelerator lacks here (NVIDIA's "
        "onnxruntime-gpu, TensorRT, Google's libedgetpu, compiled Edge TPU models), each "
        "with where it comes from and what runs instead.",
    )
    broken: list[str] = Field(
        default_factory=list,
        description="What stops the mirror from starting in this Python (numpy 2 against "
        "the OS's cv2 built for numpy 1).",
    )


class CameraReport(_Frozen):
    device: str
    found: bool
    name: str | None = Field(description="The V4L2 name, when sysfs gives it.")
    resolution: str
    fps: float
    fourcc: str
    required: bool


class DisplayReport(_Frozen):
    connector: str
    resolution: str
    connected: list[str] = Field(description="DRM connectors reporting 'connected'.")
    ok: bool


class GpioReport(_Frozen):
    numbering: str | None
    pins: dict[str, int]
    chips: list[str] = Field(description="/dev/gpiochip* found.")
    ok: bool


class SensorReport(_Frozen):
    sensor: str = Field(description="As written in the profile (path, glob or nvml:N).")
    path: str = Field(description="The file read, or the sensor itself for NVML.")
    status: SensorStatus
    temperature_c: float | None
    detail: str


class ThermalReport(_Frozen):
    warm_c: float
    hot_c: float
    critical_c: float
    sensors: list[SensorReport]


class SlotReport(_Frozen):
    name: str = Field(description="RAUC's slot name (rootfs.0, rootfs.1).")
    bootname: str = Field(description="The bootloader's name for it (A, B).")
    version: str = Field(description='The version RAUC installed into it; "" as flashed.')
    installed: str = Field(description='When RAUC installed it (its timestamp), or "".')
    state: str = Field(description="RAUC's slot state (booted, inactive).")
    boot_good: bool = Field(description="The bootloader may boot it (RAUC's boot status).")
    runs: bool = Field(description="This system booted from it.")
    boots_next: bool = Field(description="The next boot takes it (RAUC's primary).")


class UpdateStatusReport(_Frozen):
    state: str = Field(description="checking, downloading, installing, rebooting, failed, done.")
    message: str
    percent: int | None
    at_unix: float = Field(description="When the installer wrote it.")
    under_way: bool = Field(description="Busy, and written since this system started.")


class UpdatesReport(_Frozen):
    slots: list[SlotReport] = Field(description="Both A/B slots as RAUC sees them, or none.")
    detail: str = Field(description='Why there are no slots ("" when there are).')
    last: UpdateStatusReport | None = Field(
        description="The installer's last status (<data dir>/updates/status.json), if any."
    )


class DoctorReport(_Frozen):
    schema_version: Literal[1] = Field(
        SCHEMA_VERSION, description="Bumped on incompatible changes."
    )
    ok: bool = Field(description="The mirror can run here.")
    problems: list[str] = Field(description="Why it cannot run, each with what to do.")
    warnings: list[str] = Field(description="Degraded but working.")
    profile: ProfileReport
    facts: HardwareFacts
    backends: BackendsReport
    models: ModelsReport
    camera: CameraReport
    display: DisplayReport
    gpio: GpioReport
    thermal: ThermalReport
    install: InstallReport = Field(description="This Python environment against the profile.")
    admin_certificate: str | None = Field(
        None,
        description="SHA-256 fingerprint of the admin page's certificate (<data dir>/web/"
        "tls-cert.pem) as browsers show it; null until the first `mirror run` makes it.",
    )
    updates: UpdatesReport = Field(description="The A/B slots and the last update's status.")


def doctor_json_schema() -> dict[str, Any]:
    """The JSON Schema of a ``mirror doctor --json`` report."""
    return DoctorReport.model_json_schema()
