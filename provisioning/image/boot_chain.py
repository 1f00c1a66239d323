"""Whether a kernel boots a board: every node on a path it needs has a driver where it must.

A *chain* starts from device-tree nodes (by ``compatible``, or by path for a node
that has none, such as the PCIe-attached USB controller) and from devices found on
a bus at run time (by modalias: the Pi 4's VL805 xHCI, a UVC camera). Each node it
depends on (:meth:`DeviceTree.depends`) must be bound by a driver built into the
kernel, or by a module: for the root device inside the initramfs (nothing else is
there before the root is mounted), for the rest anywhere in the kernel package
(udev loads it). A compatible whose driver is only found as a match table inside a
module with no alias (vc4's HDMI, HVS and pixel valves: components registered when
vc4 itself loads) counts as that module.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from provisioning.image.devicetree import DeviceTree, DtNode
from provisioning.image.kernel_facts import KernelFacts

logger = logging.getLogger(__name__)

# References a node makes that do not hold back its probe, with why.
NOT_NEEDED = {
    # cprman takes the DSI byte clocks as parents by name (of_clk_get_parent_name): no deferral
    ("brcm,bcm2711-cprman", "brcm,bcm2835-dsi0"),
    ("brcm,bcm2711-cprman", "brcm,bcm2711-dsi1"),
    ("brcm,bcm2835-cprman", "brcm,bcm2835-dsi0"),
    ("brcm,bcm2835-cprman", "brcm,bcm2835-dsi1"),
}


@dataclass(frozen=True)
class Chain:
    name: str
    starts: tuple[str, ...]  # "compatible" strings, or node paths (starting with "/")
    modaliases: tuple[str, ...] = ()
    in_initramfs: bool = False


@dataclass(frozen=True)
class Board:
    name: str
    dtb: str  # under the kernel package's usr/lib/linux-image-VERSION/
    chains: tuple[Chain, ...]


@dataclass(frozen=True)
class Finding:
    chain: str
    what: str

    def __str__(self) -> str:
        return f"{self.chain}: {self.what}"


PI4 = Board(
    "Raspberry Pi 4 Model B",
    "broadcom/bcm2711-rpi-4-b.dtb",
    (
        Chain("root device (SD card)", ("brcm,bcm2711-emmc2",), in_initramfs=True),
        Chain(
            "HDMI (vc4)",
            (
                "brcm,bcm2711-vc5",
                "brcm,bcm2711-hvs",
                "brcm,bcm2711-hdmi0",
                "brcm,bcm2711-hdmi1",
                "brcm,bcm2711-pixelvalve0",
                "brcm,bcm2711-pixelvalve1",
                "brcm,bcm2711-pixelvalve2",
                "brcm,bcm2711-pixelvalve4",
            ),
        ),
        Chain(
            "USB camera (PCIe, VL805 xHCI, UVC)",
            ("brcm,bcm2711-pcie", "/scb/pcie@7d500000/pci@0,0/usb@0,0"),
            (
                "pci:v00001106d00003483sv00001106sd00003483bc0Csc03i30",  # VL805 xHCI
                "usb:v046Dp0825d0012dcEFdsc02dp01ic0Eisc01ip00in00",  # a UVC camera's video
            ),
        ),
        Chain("hardware watchdog", ("brcm,bcm2835-pm-wdt",), ("platform:bcm2835-wdt",)),
    ),
)
PI400 = Board("Raspberry Pi 400", "broadcom/bcm2711-rpi-400.dtb", PI4.chains)
PI5 = Board(
    "Raspberry Pi 5 Model B",
    "broadcom/bcm2712-rpi-5-b.dtb",
    (
        Chain("root device (SD card)", ("brcm,bcm2712-sdhci",), in_initramfs=True),
        # USB, Ethernet and the camera connectors sit behind the RP1 south bridge on PCIe
        Chain("USB camera (PCIe, RP1)", ("brcm,bcm2712-pcie",)),
        Chain("HDMI", ("brcm,bcm2712-hdmi0",)),
    ),
)


def check_board(
    board: Board, tree: DeviceTree, kernel: KernelFacts, initramfs: set[str]
) -> list[Finding]:
    """What keeps ``kernel`` (with ``initramfs``, module names) from using each chain."""
    findings = []
    for chain in board.chains:
        findings += _check_chain(chain, tree, kernel, initramfs)
    return findings


def _check_chain(
    chain: Chain, tree: DeviceTree, kernel: KernelFacts, initramfs: set[str]
) -> list[Finding]:
    found: list[Finding] = []
    nodes: dict[str, DtNode] = {}
    for start in chain.starts:
        node = _start_node(tree, start)
        if node is None:
            found.append(Finding(chain.name, f"no node {start} in {tree.name}"))
            continue
        if not node.enabled:
            found.append(Finding(chain.name, f"{node.path} is disabled in {tree.name}"))
        for dep in tree.depends(node.path, _not_needed):
            nodes.setdefault(dep.path, dep)
    for node in nodes.values():
        problem = _node_problem(chain, node, kernel, initramfs)
        if problem:
            found.append(Finding(chain.name, problem))
    for modalias in chain.modaliases:
        module = kernel.module_for(modalias)
        if module is None:
            found.append(Finding(chain.name, f"no module for {modalias}"))
        elif chain.in_initramfs and module not in initramfs:
            found.append(Finding(chain.name, f"{module} ({modalias}) is not in the initramfs"))
    return found


def _start_node(tree: DeviceTree, start: str) -> DtNode | None:
    if start.startswith("/"):
        try:
            return tree.node(start)
        except KeyError:
            return None
    found = tree.with_compatible(start)
    return found[0] if found else None


def _not_needed(node: DtNode, dep: DtNode) -> bool:
    return any((c, d) in NOT_NEEDED for c in node.compatibles for d in dep.compatibles)


def _node_problem(
    chain: Chain, node: DtNode, kernel: KernelFacts, initramfs: set[str]
) -> str | None:
    if not node.compatibles:
        return None  # a bus's bridge or a PCI slot: bound through its parent
    driver = kernel.driver(node.compatibles)
    if driver is None:
        return f"no driver for {node.path} ({', '.join(node.compatibles)})"
    if chain.in_initramfs and driver.module is not None and driver.module not in initramfs:
        return f"{driver.module} (for {node.path}, {driver.compatible}) is not in the initramfs"
    return None
