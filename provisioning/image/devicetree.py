"""A board's flattened device tree, read with ``fdt``: which nodes a device depends on.

A device node probes only once everything it refers to has a driver: its parents
(the buses it sits on), and every provider its properties name by phandle (clocks,
regulators through ``*-supply``, GPIOs, resets, power domains, pin control,
mailboxes, PHYs, the DDC bus of an HDMI port, its interrupt controller), and
theirs in turn. :meth:`DeviceTree.depends` follows all of them, so a test (and
the image build) can ask of each whether the kernel binds it where it must.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import fdt

from provisioning.errors import ImageError

logger = logging.getLogger(__name__)

# phandle lists whose specifiers have as many cells as the provider's "#...-cells" says
SPECIFIERS = {
    "clocks": "#clock-cells",
    "resets": "#reset-cells",
    "power-domains": "#power-domain-cells",
    "mboxes": "#mbox-cells",
    "phys": "#phy-cells",
    "dmas": "#dma-cells",
    "iommus": "#iommu-cells",
    "pwms": "#pwm-cells",
    "interconnects": "#interconnect-cells",
    "thermal-sensors": "#thermal-sensor-cells",
    "interrupts-extended": "#interrupt-cells",
    "gpios": "#gpio-cells",
    "gpio": "#gpio-cells",
}
# properties that hold a single phandle (or a list of bare phandles)
SINGLE = re.compile(r"^(.*-supply|interrupt-parent|ddc|msi-parent|firmware|raspberrypi,firmware)$")
BARE_LIST = re.compile(r"^pinctrl-\d+$")


@dataclass(frozen=True)
class DtNode:
    path: str
    compatibles: tuple[str, ...]
    enabled: bool


Ignore = Callable[[DtNode, DtNode], bool]


class DeviceTree:
    def __init__(self, blob: bytes, name: str = "device tree") -> None:
        try:
            self._tree = fdt.parse_dtb(blob)
        except Exception as exc:  # fdt raises bare Exceptions on a bad blob
            raise ImageError(f"{name}: not a device tree blob ({exc})") from exc
        self.name = name
        self._nodes = dict(_walk(self._tree.root, "/"))
        self._by_phandle = {
            int(node.get_property("phandle").value): path
            for path, node in self._nodes.items()
            if node.get_property("phandle") is not None
        }

    @classmethod
    def from_file(cls, path: Path) -> DeviceTree:
        try:
            blob = path.read_bytes()
        except OSError as exc:
            raise ImageError(f"{path}: {exc.strerror or exc}") from exc
        return cls(blob, str(path))

    def node(self, path: str) -> DtNode:
        raw = self._nodes[path]
        compat = raw.get_property("compatible")
        status = raw.get_property("status")
        enabled = status is None or str(status.value) in ("okay", "ok")
        return DtNode(path, tuple(compat.data) if compat is not None else (), enabled)

    def with_compatible(self, compatible: str) -> list[DtNode]:
        """The nodes that list ``compatible``, enabled ones first."""
        found = [self.node(p) for p in self._nodes if compatible in self.node(p).compatibles]
        return sorted(found, key=lambda n: not n.enabled)

    def needs(self, path: str) -> list[DtNode]:
        """The nodes ``path`` refers to directly: its parents and the providers it names."""
        direct = [p for p in _ancestors(path) if p != "/"] + self._referenced(path)
        return [self.node(p) for p in dict.fromkeys(direct)]

    def depends(self, path: str, ignore: Ignore | None = None) -> list[DtNode]:
        """``path`` and every node it needs to probe, each once, in the order first met;
        ``ignore(node, dep)`` leaves out a reference that does not hold back a probe."""
        seen: dict[str, DtNode] = {}
        todo = [self.node(path)]
        while todo:
            here = todo.pop(0)
            if here.path in seen:
                continue
            seen[here.path] = here
            todo += [dep for dep in self.needs(here.path) if not (ignore and ignore(here, dep))]
        return list(seen.values())

    def _referenced(self, path: str) -> list[str]:
        raw = self._nodes[path]
        found: list[int] = []
        for prop in raw.props:
            cells = _cells(prop)
            if cells is None:
                continue
            if prop.name in SPECIFIERS:
                found += self._specifier_phandles(cells, SPECIFIERS[prop.name])
            elif prop.name.endswith("-gpios"):
                found += self._specifier_phandles(cells, "#gpio-cells")
            elif SINGLE.match(prop.name):
                found += cells[:1]
            elif BARE_LIST.match(prop.name):
                found += cells
        parent = self._interrupt_parent(path)
        if parent is not None:
            found.append(parent)
        return [self._by_phandle[h] for h in found if h in self._by_phandle]

    def _specifier_phandles(self, cells: list[int], count_name: str) -> list[int]:
        phandles, i = [], 0
        while i < len(cells):
            handle = cells[i]
            provider = self._by_phandle.get(handle)
            if provider is None:
                break  # not a phandle: the rest cannot be told apart
            phandles.append(handle)
            count = self._nodes[provider].get_property(count_name)
            i += 1 + (int(count.value) if count is not None else 0)
        return phandles

    def _interrupt_parent(self, path: str) -> int | None:
        """The phandle of the interrupt controller of a node with interrupts."""
        if self._nodes[path].get_property("interrupts") is None:
            return None
        for here in (path, *reversed(_ancestors(path))):
            prop = self._nodes[here].get_property("interrupt-parent")
            if prop is not None:
                return int(prop.value)
        return None


def _cells(prop: object) -> list[int] | None:
    data = getattr(prop, "data", None)
    if isinstance(prop, fdt.PropWords) and isinstance(data, list):
        return [int(x) for x in data]
    return None


def _ancestors(path: str) -> list[str]:
    """The parents of ``path``, root first (``/a/b/c`` -> ``/``, ``/a``, ``/a/b``)."""
    parts = path.strip("/").split("/")
    return ["/" + "/".join(parts[:i]) if i else "/" for i in range(len(parts))]


def _walk(node: fdt.Node, path: str) -> Iterator[tuple[str, fdt.Node]]:
    yield path, node
    for child in node.nodes:
        yield from _walk(child, f"{path.rstrip('/')}/{child.name}")
