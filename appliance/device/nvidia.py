"""NVIDIA GPUs: NVML (``nvidia-ml-py``) when importable, else ``nvidia-smi``, else procfs.

NVML and ``nvidia-smi`` describe the running machine, so they are asked only
for a live probe; a probe of a mounted image or a faked root reads
``<root>/proc/driver/nvidia/gpus/*/information`` alone. The NVML loader and
the command runner are injectable so tests fake both without a GPU.
"""

from __future__ import annotations

import importlib
import logging
import re
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from appliance.device.facts import NvidiaGpu

logger = logging.getLogger(__name__)

NVIDIA_SMI_QUERY = ("nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader")
COMMAND_TIMEOUT_S = 10.0

Runner = Callable[[Sequence[str]], str]
NvmlLoader = Callable[[], Any]


def run_command(command: Sequence[str]) -> str:
    """stdout of ``command``; raises ``OSError`` or ``subprocess.SubprocessError``."""
    done = subprocess.run(
        list(command), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=True
    )
    return done.stdout


def load_nvml() -> Any:
    """The ``pynvml`` module (package ``nvidia-ml-py``), or None when not installed."""
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        return None


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def nvml_gpus(nvml: Any) -> tuple[NvidiaGpu, ...]:
    """Every GPU NVML sees; raises whatever NVML raises (an ``NVMLError``)."""
    nvml.nvmlInit()
    try:
        gpus = []
        for index in range(int(nvml.nvmlDeviceGetCount())):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            gpus.append(
                NvidiaGpu(
                    name=_text(nvml.nvmlDeviceGetName(handle)),
                    memory_mb=int(memory.total) // (1024 * 1024),
                    source="nvml",
                )
            )
        return tuple(gpus)
    finally:
        nvml.nvmlShutdown()


def parse_nvidia_smi(output: str) -> tuple[NvidiaGpu, ...]:
    """Lines like ``Tesla T4, 15360 MiB``."""
    gpus = []
    for line in output.splitlines():
        if not line.strip():
            continue
        name, _, memory = line.rpartition(",")
        if not name:
            name, memory = memory, ""
        found = re.search(r"(\d+)\s*MiB", memory)
        gpus.append(
            NvidiaGpu(
                name=name.strip(),
                memory_mb=int(found.group(1)) if found else None,
                source="nvidia-smi",
            )
        )
    return tuple(gpus)


def procfs_gpus(root: Path) -> tuple[NvidiaGpu, ...]:
    """``Model:`` lines of ``<root>/proc/driver/nvidia/gpus/*/information``."""
    gpus = []
    for info in sorted((root / "proc/driver/nvidia/gpus").glob("*/information")):
        try:
            text = info.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        found = re.search(r"^Model:\s*(.+?)\s*$", text, re.MULTILINE)
        if found:
            gpus.append(NvidiaGpu(name=found.group(1), memory_mb=None, source="procfs"))
    return tuple(gpus)


def _live_gpus(
    nvml_loader: NvmlLoader, runner: Runner, notes: list[str]
) -> tuple[NvidiaGpu, ...] | None:
    nvml = nvml_loader()
    if nvml is not None:
        try:
            return nvml_gpus(nvml)
        except Exception as exc:  # NVMLError has no stable import path
            notes.append(f"NVML failed: {' '.join(str(exc).split())}")
    try:
        return parse_nvidia_smi(runner(NVIDIA_SMI_QUERY))
    except FileNotFoundError:
        logger.debug("nvidia-smi not found")
    except (OSError, subprocess.SubprocessError) as exc:
        notes.append(f"nvidia-smi failed: {' '.join(str(exc).split())}")
    return None


def probe_nvidia(
    root: Path,
    *,
    live: bool,
    nvml_loader: NvmlLoader = load_nvml,
    runner: Runner = run_command,
) -> tuple[tuple[NvidiaGpu, ...], list[str]]:
    """The GPUs seen and notes on what failed on the way."""
    notes: list[str] = []
    if live:
        gpus = _live_gpus(nvml_loader, runner, notes)
        if gpus is not None:
            return gpus, notes
    return procfs_gpus(root), notes


def gpu_temperature_c(
    index: int, *, nvml_loader: NvmlLoader = load_nvml, runner: Runner = run_command
) -> float:
    """GPU ``index``'s temperature (live only); raises ``OSError`` when it cannot be read."""
    nvml = nvml_loader()
    if nvml is not None:
        try:
            nvml.nvmlInit()
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                return float(nvml.nvmlDeviceGetTemperature(handle, 0))  # NVML_TEMPERATURE_GPU
            finally:
                nvml.nvmlShutdown()
        except Exception as exc:  # NVMLError has no stable import path
            logger.debug("NVML temperature failed: %s", exc)
    command = (
        "nvidia-smi",
        "--query-gpu=temperature.gpu",
        "--format=csv,noheader,nounits",
        f"--id={index}",
    )
    try:
        return float(runner(command).strip().splitlines()[0])
    except (subprocess.SubprocessError, ValueError, IndexError) as exc:
        raise OSError(f"GPU {index} temperature unreadable: {exc}") from exc
