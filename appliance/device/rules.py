"""Check one match rule against the facts, and say in words what was seen."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from appliance.device.facts import HardwareFacts


@dataclass(frozen=True)
class RuleOutcome:
    """Rule ``rule`` wanted ``wanted``; ``ok`` says whether it held; ``seen`` is in words."""

    rule: str
    wanted: Any
    ok: bool
    seen: str


def _contains(text: str | None, wanted: str) -> bool:
    return text is not None and wanted.lower() in text.lower()


def _device_tree(facts: HardwareFacts, wanted: Any) -> tuple[bool, str]:
    model = facts.device_tree_model
    seen = f"device-tree model {model!r}" if model else "no device-tree model"
    return _contains(model, str(wanted)), seen


def _tegra(facts: HardwareFacts, wanted: Any) -> tuple[bool, str]:
    release = facts.tegra_release
    seen = f"NVIDIA L4T release {release!r}" if release else "no /etc/nv_tegra_release"
    return (release is not None) == bool(wanted), seen


def _tegra_contains(facts: HardwareFacts, wanted: Any) -> tuple[bool, str]:
    ok, seen = _tegra(facts, True)
    return ok and _contains(facts.tegra_release, str(wanted)), seen


def _gpu_names(facts: HardwareFacts) -> str:
    if not facts.nvidia_gpus:
        return "no NVIDIA GPU"
    return "NVIDIA GPU " + ", ".join(repr(gpu.name) for gpu in facts.nvidia_gpus)


def _gpu(facts: HardwareFacts, wanted: Any) -> tuple[bool, str]:
    return bool(facts.nvidia_gpus) == bool(wanted), _gpu_names(facts)


def _gpu_name(facts: HardwareFacts, wanted: Any) -> tuple[bool, str]:
    ok = any(_contains(gpu.name, str(wanted)) for gpu in facts.nvidia_gpus)
    return ok, _gpu_names(facts)


def _coral(facts: HardwareFacts, wanted: Any) -> tuple[bool, str]:
    found = [f"USB {c.usb_id}" for c in facts.coral_usb] + list(facts.coral_pcie)
    seen = f"a Coral accelerator ({', '.join(found)})" if found else "no Coral accelerator"
    return bool(found) == bool(wanted), seen


def _coral_usb(facts: HardwareFacts, wanted: Any) -> tuple[bool, str]:
    ids = ", ".join(c.usb_id for c in facts.coral_usb)
    seen = f"a Coral USB accelerator ({ids})" if ids else "no Coral USB accelerator"
    return bool(facts.coral_usb) == bool(wanted), seen


def _coral_pcie(facts: HardwareFacts, wanted: Any) -> tuple[bool, str]:
    nodes = ", ".join(facts.coral_pcie)
    seen = f"a PCIe Coral ({nodes})" if nodes else "no PCIe Coral (/dev/apex_*)"
    return bool(facts.coral_pcie) == bool(wanted), seen


def _arch(facts: HardwareFacts, wanted: Any) -> tuple[bool, str]:
    return facts.arch == wanted, f"architecture {facts.arch}"


def _memory(facts: HardwareFacts, wanted: Any) -> tuple[bool, str]:
    if facts.memory_mb is None:
        return False, "memory unknown"
    return facts.memory_mb >= int(wanted), f"{facts.memory_mb} MB of memory"


def _cpus(facts: HardwareFacts, wanted: Any) -> tuple[bool, str]:
    if facts.cpu_count is None:
        return False, "CPU count unknown"
    return facts.cpu_count >= int(wanted), f"{facts.cpu_count} CPUs"


CHECKS: dict[str, Callable[[HardwareFacts, Any], tuple[bool, str]]] = {
    "device_tree_model_contains": _device_tree,
    "tegra_release": _tegra,
    "tegra_release_contains": _tegra_contains,
    "nvidia_gpu": _gpu,
    "nvidia_gpu_name_contains": _gpu_name,
    "coral": _coral,
    "coral_usb": _coral_usb,
    "coral_pcie": _coral_pcie,
    "arch": _arch,
    "min_memory_mb": _memory,
    "min_cpu_count": _cpus,
}


def check_rule(rule: str, wanted: Any, facts: HardwareFacts) -> RuleOutcome:
    ok, seen = CHECKS[rule](facts, wanted)
    return RuleOutcome(rule=rule, wanted=wanted, ok=ok, seen=seen)
