"""What the profile's accelerator needs from its vendor and this device lacks, each part
named with where it comes from and what the device runs instead.

A Jetson's TensorRT and CUDA backends need NVIDIA's onnxruntime-gpu built for its JetPack
(on no index pip reaches: the installer brings the wheel) and JetPack's TensorRT; its
cv2 is JetPack's, which numpy 2 cannot import. A Coral needs Google's ``libedgetpu1-std``
and models compiled by ``edgetpu_compiler``. Neither vendor's parts can be had offline, so
each missing part is one line; the mirror still runs, on what ``choose_backend`` picked.
Every input is injectable: tests fake the device root, the installed versions and the
providers.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from appliance.backend_names import (
    CUDA,
    CUDA_PROVIDER,
    EDGETPU,
    PROVIDERS,
    TENSORRT,
    TENSORRT_PROVIDER,
)
from appliance.device.facts import HardwareFacts
from appliance.device.jetpack import onnxruntime_source, parse_release
from appliance.device.profile import HardwareProfile
from appliance.doctor.install_check import VersionOf, installed_version
from appliance.doctor.numpy_abi import mismatch
from appliance.errors import MirrorError
from appliance.inference.edgetpu_parts import (
    CPU_INSTEAD,
    EDGETPU_SUFFIX,
    edgetpu_variant,
    library_missing,
    library_path,
    variant_missing,
)
from appliance.inference.model_check import base_model
from appliance.inference.runtime_models import confirm_model
from appliance.modelstore import ModelStore

logger = logging.getLogger(__name__)

VENDOR_FLAG = "`mirror provision bundle --vendor DIR`"
GPU_PROVIDERS = (PROVIDERS[TENSORRT_PROVIDER], PROVIDERS[CUDA_PROVIDER])


def _providers() -> list[str]:
    from appliance.inference.onnx_backend import available_providers

    try:
        return available_providers()
    except MirrorError:
        return []


def _importable(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


@dataclass(frozen=True)
class VendorInputs:
    """What the check reads; each part is replaced in tests."""

    root: Path = Path("/")
    version_of: VersionOf = installed_version
    providers: Callable[[], Sequence[str]] = _providers
    importable: Callable[[str], bool] = _importable
    numpy_mismatch: Callable[[], str | None] = mismatch


@dataclass
class VendorReport:
    """``missing``: degraded (a slower backend runs); ``broken``: the mirror cannot start."""

    missing: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)


def _instead(chosen: str | None) -> str:
    if chosen is None:
        return "and no backend works"
    return f"the mirror runs on {chosen} instead"


def _jetson(
    profile: HardwareProfile, facts: HardwareFacts, chosen: str | None, given: VendorInputs
) -> VendorReport:
    report = VendorReport()
    broken = given.numpy_mismatch()
    if broken is not None:
        report.broken.append(broken)
    gpu_backends = [b for b in profile.backends if b in (TENSORRT, CUDA)]
    if not gpu_backends or chosen in gpu_backends:
        return report
    source = onnxruntime_source(parse_release(facts.tegra_release))
    bring = f"bring it with {VENDOR_FLAG} and provision again; {_instead(chosen)}"
    gpu = given.version_of("onnxruntime-gpu")
    cpu = given.version_of("onnxruntime")
    if gpu is None and cpu is not None:
        report.missing.append(
            f"onnxruntime {cpu} is PyPI's CPU build (no CUDA or TensorRT): uninstall it; "
            f"{', '.join(gpu_backends)} need NVIDIA's onnxruntime-gpu {source}: {bring}"
        )
    elif gpu is None:
        report.missing.append(
            f"onnxruntime-gpu is not installed: {', '.join(gpu_backends)} need NVIDIA's "
            f"build {source}: {bring}"
        )
    else:
        have = list(given.providers())
        if not set(GPU_PROVIDERS) & set(have):
            report.missing.append(
                f"onnxruntime-gpu {gpu} has neither {' nor '.join(GPU_PROVIDERS)} (it has "
                f"{', '.join(have) or 'none'}): not NVIDIA's build for this JetPack; replace "
                f"it with the one {source}: {bring}"
            )
    if TENSORRT in gpu_backends and not given.importable("tensorrt"):
        report.missing.append(
            "tensorrt is not importable: TensorRT's Python bindings are JetPack's "
            "python3-libnvinfer (`apt install python3-libnvinfer`, or the whole "
            "nvidia-jetpack), seen through the venv's system site packages; with its "
            f"libnvinfer they give the TensorRT backend; {_instead(chosen)}"
        )
    return report


def _edgetpu_models(profile: HardwareProfile, store: ModelStore) -> list[Path]:
    """The compiled files the profile's ``_edgetpu`` roles (and their confirm) run."""
    entries = store.manifest.entries()
    roles = profile.models.by_role()
    names = [*roles.values(), confirm_model(roles["detector"])]
    files = []
    for name in dict.fromkeys(names):
        base = base_model(name, entries)
        if base is not None and name == f"{base}{EDGETPU_SUFFIX}":
            files.append(edgetpu_variant(store.file_path(base)))
    return files


def _coral(
    profile: HardwareProfile, store: ModelStore, chosen: str | None, given: VendorInputs
) -> VendorReport:
    report = VendorReport()
    if EDGETPU not in profile.backends:
        return report
    if library_path(root=given.root) is None:
        report.missing.append(f"{library_missing()}; {CPU_INSTEAD}")
    for variant in _edgetpu_models(profile, store):
        if not variant.is_file():
            base = variant.name.replace(EDGETPU_SUFFIX, "", 1)
            report.missing.append(
                f"{variant_missing(variant)}; {base} runs on the CPU (LiteRT) instead"
            )
    return report


def check_vendor(
    profile: HardwareProfile,
    facts: HardwareFacts,
    store: ModelStore,
    chosen: str | None,
    given: VendorInputs | None = None,
) -> VendorReport:
    """Each vendor part the profile's accelerator lacks on this device, in one line each."""
    given = given or VendorInputs()
    report = VendorReport()
    for part in (
        _jetson(profile, facts, chosen, given) if profile.match.tegra_release else VendorReport(),
        _coral(profile, store, chosen, given),
    ):
        report.missing += part.missing
        report.broken += part.broken
    for line in (*report.broken, *report.missing):
        logger.info("vendor part: %s", line)
    return report
