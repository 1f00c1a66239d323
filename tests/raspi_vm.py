"""A copy of a built image booted on QEMU's ``raspi4b`` machine, as close to a Pi 4 as QEMU goes.

QEMU 9 added ``raspi4b``; Debian 12 ships QEMU 7.2, so QEMU 10 comes from Debian 13's
``qemu-system-arm`` in a small Debian 13 root of this machine's own architecture
(mmdebstrap, cached in the image cache; run through ``chroot``, nothing emulated
but the guest). The guest boots what the Pi's firmware would load from the image's
FAT partition (``config.txt``'s kernel and initramfs, the Pi 4's own device tree,
``cmdline.txt``), with the image as its SD card, attached to the SD host that
Debian's kernel reaches through ``sdhci_iproc`` and its regulators.

What the machine cannot do (QEMU 10.0's ``bcm2838`` model): no PCIe (so no VL805
USB and no camera), no GENET Ethernet (so no address to reach the admin page from),
no HDMI block (the HDMI controllers, their I2C and L2 interrupt controllers and the
DVP clock are unmodelled registers, and a kernel touching them dies with a
synchronous external abort), and the firmware's GPIO-expander properties are not
answered. Its mini UART locked CPU 0 up when the kernel set up its interrupt, and
its power-management block resets the machine the moment the watchdog is started.
QEMU itself disables its unmodelled PCIe, RNG, thermal and GENET nodes;
:data:`NOT_EMULATED` disables the HDMI block's in a copy of the device tree, and the
SD card's two supplies, which the expander switches, are made plain fixed regulators
there (:func:`emulated_tree`). The command line moves the serial console to the
PL011 and leaves the watchdog's module out (:func:`emulated_cmdline`); nothing else
is changed.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

import fdt

from provisioning.image import cache
from provisioning.image.debian_root import DPKG_EXCLUDES, SEARCH_PATH
from tests.image_vm import BOOT, Vm, partitions

logger = logging.getLogger(__name__)

# compatible -> why it is disabled in the copy QEMU boots
NOT_EMULATED = {
    "brcm,bcm2711-l2-intc": "the HDMI block's L2 interrupt controllers: unmodelled registers",
    "brcm,bcm2711-hdmi-i2c": "the HDMI ports' DDC I2C: unmodelled registers",
    "brcm,bcm2711-hdmi0": "HDMI 0: unmodelled",
    "brcm,bcm2711-hdmi1": "HDMI 1: unmodelled",
    "brcm,brcm2711-dvp": "the HDMI block's clock and reset (DVP): unmodelled",
}
QEMU_PACKAGE = "qemu-system-arm"
BUILD_TIMEOUT_S = 1800
INSIDE = "/mnt/vm"
MINI_UART_CONSOLE = "console=ttyS1"
CONSOLE = "console=ttyAMA0,115200"
WATCHDOG_MODULE = "bcm2835_wdt"
EMMC2_BUS = "/generic-sdhci/sd-bus"  # where the work folder is seen inside the QEMU root


def qemu_root(log: Path) -> Path:
    """A Debian 13 root with QEMU 10 (``raspi4b``), built once and cached."""
    arch = subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
    ).stdout.strip()
    root = cache.cache_dir() / "qemu" / f"trixie-{arch}"
    with cache.locked(root):
        if (root / "usr/bin/qemu-system-aarch64").is_file():
            return root
        partial = root.with_name(root.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        cmd = [
            "mmdebstrap",
            "--mode=root",
            "--variant=apt",
            "--format=directory",
            f"--include={QEMU_PACKAGE}",
            *(f"--dpkgopt={option}" for option in DPKG_EXCLUDES),
            "trixie",
            str(partial),
        ]
        with log.open("a") as out:
            subprocess.run(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PATH": SEARCH_PATH},
                timeout=BUILD_TIMEOUT_S,
                check=True,
            )
        partial.rename(root)
        return root


def emulated_tree(dtb: bytes) -> bytes:
    """The board's device tree with the nodes QEMU does not model disabled, and the SD
    card's supplies no longer switched through the firmware's GPIO expander (QEMU's
    firmware does not answer its GPIO properties: both regulators fail with -EIO and the
    SD host waits for them for ever): each is a ``regulator-fixed`` at its top voltage,
    still bound by the ``fixed`` module from the initramfs."""
    tree = fdt.parse_dtb(dtb)
    expander = _phandles(tree, "raspberrypi,firmware-gpio")
    todo = [tree.root]
    while todo:
        node = todo.pop()
        todo += node.nodes
        compat = node.get_property("compatible")
        if compat is None:
            continue
        if any(c in NOT_EMULATED for c in compat.data):
            node.set_property("status", "disabled")
        if _switched_by(node, expander) and compat.data[0].startswith("regulator-"):
            _make_fixed(node)
    blob: bytes = tree.to_dtb(version=17)
    return blob


def _phandles(tree: fdt.FDT, compatible: str) -> set[int]:
    found, todo = set(), [tree.root]
    while todo:
        node = todo.pop()
        todo += node.nodes
        compat, handle = node.get_property("compatible"), node.get_property("phandle")
        if compat is not None and handle is not None and compatible in compat.data:
            found.add(int(handle.value))
    return found


def _switched_by(node: fdt.Node, providers: set[int]) -> bool:
    return any(
        (prop := node.get_property(name)) is not None and int(prop.data[0]) in providers
        for name in ("gpio", "gpios")
    )


def _make_fixed(node: fdt.Node) -> None:
    top = node.get_property("regulator-max-microvolt")
    for name in ("gpio", "gpios", "states", "gpios-states", "enable-active-high"):
        if node.get_property(name) is not None:
            node.remove_property(name)
    node.set_property("compatible", "regulator-fixed")
    if top is not None:
        node.set_property("regulator-min-microvolt", int(top.value))


def emulated_cmdline(cmdline: str) -> str:
    """The image's kernel command line with two changes for QEMU: the serial console on the
    PL011 (``ttyAMA0``, QEMU's first serial port; last, so systemd's status goes there too),
    not the mini UART (``ttyS1``: setting up its interrupt locked CPU 0 up, and with it the
    SD host's interrupts), and the watchdog's
    module left out (QEMU's power-management block resets the machine the moment the
    watchdog is started, where the SoC counts down: systemd's RuntimeWatchdogSec rebooted
    it in a loop 42 s into every boot)."""
    words = [w for w in cmdline.split() if not w.startswith(f"{MINI_UART_CONSOLE},")]
    return " ".join([*words, CONSOLE, f"modprobe.blacklist={WATCHDOG_MODULE}"])


def _fat_file(image: Path, name: str) -> bytes:
    boot = partitions(image)[BOOT["A"]]  # slot A's boot partition (autoboot.txt's [all])
    fat = f"{image}@@{boot['start'] * 512}"
    done = subprocess.run(["mtype", "-i", fat, f"::{name}"], capture_output=True, check=True)
    return done.stdout


class RaspiVm(Vm):
    """The image as the SD card of QEMU's ``raspi4b`` (the serial console in a file)."""

    def __init__(self, image: Path, work: Path, name: str, qemu: Path) -> None:
        super().__init__(image, work, name)
        self.firmware(tryboot=False)  # slot A's kernel and initramfs, copied out
        self.qemu = qemu
        self.dtb = work / f"{name}.dtb"
        self.dtb.write_bytes(emulated_tree(_fat_file(image, "bcm2711-rpi-4-b.dtb")))
        self.written_cmdline = _fat_file(image, "cmdline.txt").decode().strip()
        self.cmdline = emulated_cmdline(self.written_cmdline)
        size = image.stat().st_size  # QEMU's SD card is a power of two in size
        with image.open("r+b") as disk:
            disk.truncate(1 << (size - 1).bit_length())

    def start(self, tryboot: bool = False, usb: bool = False) -> None:
        """(raspi4b has no tryboot and no USB here: slot A, as flashed.)"""
        del tryboot, usb
        self.serial.write_bytes(b"")
        inside = f"{INSIDE}/"
        qemu = [
            "qemu-system-aarch64",
            "-M", "raspi4b",
            "-kernel", inside + self.kernel.name,
            "-initrd", inside + self.initrd.name,
            "-dtb", inside + self.dtb.name,
            "-append", self.cmdline,
            # the card in the Pi 4's own SD slot, on EMMC2 (the first SDHCI QEMU makes);
            # QEMU's default puts it on the Arasan SDHCI, the Pi 4's Wi-Fi SDIO
            "-drive", f"file={inside}{self.image.name},if=none,format=raw,id=card",
            "-device", f"sd-card,drive=card,bus={EMMC2_BUS}",
            "-display", "none",
            "-serial", f"file:{inside}{self.serial.name}",  # PL011 (ttyAMA0): the console
            "-serial", "null",  # the mini UART (ttyS1)
            "-monitor", f"unix:{inside}{self.monitor.name},server,nowait",
        ]  # fmt: skip
        mounts = (
            'mkdir -p "$1/mnt/vm" && mount --bind "$2" "$1/mnt/vm" && '
            'mount --rbind /dev "$1/dev" && mount -t proc proc "$1/proc" && '
            'root=$1 && shift 2 && exec chroot "$root" "$@"'
        )
        cmd = [
            "unshare", "--mount", "--propagation", "private", "--",
            "sh", "-c", mounts, "sh", str(self.qemu), str(self.work), *qemu,
        ]  # fmt: skip
        assert self.image.parent == self.work and self.kernel.parent == self.work
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def power_off(self, timeout: float = 30) -> None:
        """No ACPI on a Pi: QEMU is stopped (the copy is not read afterwards)."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(30)
        self.proc = None
