"""Probe the device: every fact is read under an injectable root directory.

``probe(Path("/"))`` looks at the running machine; ``probe(tmp_dir)`` at a
faked or mounted one. Only the NVIDIA query (NVML, ``nvidia-smi``) and the
architecture fallback (``platform.machine``) describe the running machine, so
both are injectable and NVIDIA is asked live only when ``live`` is true
(by default: when the root is ``/``).
"""

from __future__ import annotations

import logging
import os
import platform
import re
from collections.abc import Callable
from pathlib import Path

from appliance.device.facts import HardwareFacts
from appliance.device.nvidia import NvmlLoader, Runner, load_nvml, probe_nvidia, run_command
from appliance.device.usb import find_coral_pcie, find_coral_usb

logger = logging.getLogger(__name__)


def _read_text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None


def device_tree_model(root: Path) -> str | None:
    """``/proc/device-tree/model`` without its trailing NUL byte."""
    text = _read_text(root / "proc/device-tree/model")
    if text is None:
        return None
    return text.replace("\x00", "").strip() or None


def tegra_release(root: Path) -> str | None:
    """The first line of ``/etc/nv_tegra_release`` (e.g. ``# R36 (release), REVISION: 3.0``)."""
    text = _read_text(root / "etc/nv_tegra_release")
    if text is None:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "(empty)"


def cpu_count(root: Path, live: bool) -> int | None:
    """``processor`` lines of ``/proc/cpuinfo``; ``os.cpu_count()`` for a live probe without it."""
    text = _read_text(root / "proc/cpuinfo")
    if text is not None:
        count = len(re.findall(r"^processor\s*:", text, re.MULTILINE))
        if count:
            return count
    return os.cpu_count() if live else None


def memory_mb(root: Path) -> int | None:
    """``MemTotal`` of ``/proc/meminfo`` in MB."""
    text = _read_text(root / "proc/meminfo")
    found = re.search(r"^MemTotal:\s*(\d+)\s*kB", text or "", re.MULTILINE)
    return int(found.group(1)) // 1024 if found else None


def architecture(root: Path, machine: Callable[[], str]) -> str:
    """``/proc/sys/kernel/arch`` under the root, else ``machine()``."""
    text = _read_text(root / "proc/sys/kernel/arch")
    if text and text.strip():
        return text.strip()
    return machine()


def is_live(root: Path) -> bool:
    return root.resolve() == Path("/").resolve()


def probe(
    root: Path = Path("/"),
    *,
    machine: Callable[[], str] = platform.machine,
    live: bool | None = None,
    nvml_loader: NvmlLoader = load_nvml,
    runner: Runner = run_command,
) -> HardwareFacts:
    """The facts of the device under ``root``."""
    live = is_live(root) if live is None else live
    gpus, notes = probe_nvidia(root, live=live, nvml_loader=nvml_loader, runner=runner)
    facts = HardwareFacts(
        root=str(root),
        arch=architecture(root, machine),
        device_tree_model=device_tree_model(root),
        tegra_release=tegra_release(root),
        nvidia_gpus=gpus,
        coral_usb=find_coral_usb(root),
        coral_pcie=find_coral_pcie(root),
        cpu_count=cpu_count(root, live),
        memory_mb=memory_mb(root),
        notes=tuple(notes),
    )
    logger.info("probe of %s: %s", root, facts.summary())
    return facts
