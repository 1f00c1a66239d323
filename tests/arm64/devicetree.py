"""A faked Raspberry Pi 4: the files ``appliance.hardware.probe`` reads, under a directory.

Its ``proc/cpuinfo`` is also what emulated programs are shown as their own
``/proc/cpuinfo`` (see :mod:`tests.arm64.chroot`): qemu-user 7.2 passes the
host's x86 one through, and LiteRT's XNNPACK, reading it to pick its arm
kernels, crashes on it (SIGSEGV in ``allocate_tensors``).
"""

from __future__ import annotations

from pathlib import Path

RPI4_MODEL = "Raspberry Pi 4 Model B Rev 1.4"
CPUINFO = "proc/cpuinfo"

# One Cortex-A72 core as the Pi 4's 64-bit kernel shows it.
_CORE = (
    "processor\t: {n}\n"
    "BogoMIPS\t: 108.00\n"
    "Features\t: fp asimd evtstrm crc32 cpuid\n"
    "CPU implementer\t: 0x41\n"
    "CPU architecture: 8\n"
    "CPU variant\t: 0x0\n"
    "CPU part\t: 0xd08\n"
    "CPU revision\t: 3\n\n"
)


def rpi4_cpuinfo(cpus: int = 4) -> str:
    cores = "".join(_CORE.format(n=n) for n in range(cpus))
    return cores + f"Revision\t: c03114\nSerial\t\t: 10000000e3f1a2b4\nModel\t\t: {RPI4_MODEL}\n"


def write_rpi4(base: Path, *, cpus: int = 4, memory_kb: int = 3_884_404) -> Path:
    """Device tree model (NUL-terminated, as the kernel shows it), cpuinfo, meminfo, arch."""
    files = {
        "proc/device-tree/model": RPI4_MODEL.encode() + b"\x00",
        "proc/device-tree/compatible": b"raspberrypi,4-model-b\x00brcm,bcm2711\x00",
        CPUINFO: rpi4_cpuinfo(cpus).encode(),
        "proc/meminfo": f"MemTotal:        {memory_kb} kB\n".encode(),
        "proc/sys/kernel/arch": b"aarch64\n",
    }
    for rel, data in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return base
