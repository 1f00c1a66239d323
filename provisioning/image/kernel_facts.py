"""What a Debian kernel package binds: built in, as a module, or not at all.

Read from an unpacked kernel (its ``boot/`` and ``lib/modules/VERSION`` after
``depmod``): ``modules.alias`` maps a device-tree ``compatible`` (``of:N*T*Cvalue``)
or a bus modalias to its module, ``modules.dep`` gives what a module loads first.
A built-in driver leaves no alias in 6.1's ``modules.builtin.modinfo``; its match
table's ``compatible`` strings are in the kernel image itself, each between NUL
bytes (``struct of_device_id`` keeps them in a fixed-size, zero-padded field).
"""

from __future__ import annotations

import fnmatch
import gzip
import json
import logging
import lzma
import re
from dataclasses import dataclass, field
from pathlib import Path

from provisioning.errors import ImageError

logger = logging.getLogger(__name__)

OF_PREFIX = "of:N*T*C"
GZIP_MAGIC = b"\x1f\x8b"
# a "vendor,device" string between NUL bytes, as a match table keeps its compatibles
COMPATIBLE = re.compile(rb"\0([a-z0-9][a-z0-9._+-]*,[a-z0-9][a-z0-9._+-]*)\0")
TABLES_INDEX = "mirror-match-tables.json"


@dataclass(frozen=True)
class Driver:
    compatible: str
    module: str | None  # None: built into the kernel image

    def __str__(self) -> str:
        return f"{self.compatible} -> {self.module or 'built in'}"


@dataclass
class KernelFacts:
    version: str
    image: bytes = field(repr=False)
    aliases: list[tuple[str, str]] = field(repr=False)  # (pattern, module)
    deps: dict[str, tuple[str, ...]] = field(repr=False)  # module -> the modules it needs
    config: dict[str, str] = field(repr=False)
    tables: dict[str, str] = field(default_factory=dict, repr=False)  # compatible -> module
    _of: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for pattern, module in self.aliases:
            if pattern.startswith(OF_PREFIX):
                self._of.setdefault(pattern[len(OF_PREFIX) :].removesuffix("C*"), module)

    def driver(self, compatibles: tuple[str, ...]) -> Driver | None:
        """The driver that binds a node listing ``compatibles`` (most specific first)."""
        for compat in compatibles:
            module = self._of.get(compat)
            if module is not None:
                return Driver(compat, module)
            if b"\0" + compat.encode() + b"\0" in self.image:
                return Driver(compat, None)
        for compat in compatibles:  # a component driver registered by its module, no alias
            if compat in self.tables:
                return Driver(compat, self.tables[compat])
        return None

    def module_for(self, modalias: str) -> str | None:
        """The module whose alias matches a device's ``modalias`` (a PCI or USB device)."""
        for pattern, module in self.aliases:
            if fnmatch.fnmatchcase(modalias, pattern):
                return module
        return None

    def closure(self, modules: tuple[str, ...] | set[str]) -> set[str]:
        """``modules`` and every module they load first (what ``MODULES=list`` copies)."""
        out: set[str] = set()
        todo = [_name(m) for m in modules]
        while todo:
            name = todo.pop()
            if name in out:
                continue
            out.add(name)
            todo += self.deps.get(name, ())
        return out


def _name(module: str) -> str:
    return module.replace("-", "_")


def module_name(path: str) -> str:
    base = path.rsplit("/", 1)[-1]
    for suffix in (".xz", ".zst", ".gz"):
        base = base.removesuffix(suffix)
    return _name(base.removesuffix(".ko"))


def modules_dir(root: Path) -> Path:
    """The one ``lib/modules/VERSION`` (or ``usr/lib/...``) under ``root``."""
    # on a merged-/usr root /lib is a link to usr/lib: the same folder, counted once
    bases = [root / "usr/lib/modules"]
    if not (root / "lib").is_symlink():
        bases.append(root / "lib/modules")
    found = sorted(p for base in bases for p in base.glob("*") if p.is_dir())
    if len(found) != 1:
        raise ImageError(f"{root}: expected one kernel's modules, found {len(found)}")
    return found[0]


def read_kernel(root: Path, *, keep_index: bool = True) -> KernelFacts:
    """The facts of the kernel unpacked (and ``depmod``-ed) under ``root``; the match-table
    index is written beside the modules unless ``keep_index`` is false (an image's root)."""
    mods = modules_dir(root)
    version = mods.name
    alias_file = mods / "modules.alias"
    if not alias_file.is_file():
        raise ImageError(f"{alias_file}: missing (run depmod -b {root} {version})")
    aliases = []
    for line in alias_file.read_text(encoding="utf-8", errors="replace").splitlines():
        words = line.split()
        if len(words) == 3 and words[0] == "alias":
            aliases.append((words[1], words[2]))
    deps: dict[str, tuple[str, ...]] = {}
    for line in (mods / "modules.dep").read_text(encoding="utf-8").splitlines():
        path, _, needs = line.partition(":")
        deps[module_name(path)] = tuple(module_name(p) for p in needs.split())
    return KernelFacts(
        version=version,
        image=_kernel_image(root / "boot" / f"vmlinuz-{version}"),
        aliases=aliases,
        deps=deps,
        config=_config(root / "boot" / f"config-{version}"),
        tables=match_tables(mods, keep=keep_index),
    )


def match_tables(mods: Path, *, keep: bool = True) -> dict[str, str]:
    """Every compatible-like string in each module file (kept in an index beside them, so
    the module files themselves may be removed from a cached copy)."""
    index = mods / TABLES_INDEX
    if index.is_file():
        loaded: dict[str, str] = json.loads(index.read_text(encoding="utf-8"))
        return loaded
    tables: dict[str, str] = {}
    for path in sorted(mods.rglob("*.ko*")):
        blob = path.read_bytes()
        if path.suffix == ".xz":
            blob = lzma.decompress(blob)
        elif path.suffix == ".gz":
            blob = gzip.decompress(blob)
        for found in COMPATIBLE.finditer(blob):
            tables.setdefault(found.group(1).decode(), module_name(path.name))
    if keep:
        index.write_text(json.dumps(tables, sort_keys=True), encoding="utf-8")
    return tables


def _kernel_image(path: Path) -> bytes:
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise ImageError(f"{path}: {exc.strerror or exc}") from exc
    return gzip.decompress(blob) if blob[:2] == GZIP_MAGIC else blob


def _config(path: Path) -> dict[str, str]:
    config = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            key, sep, value = line.partition("=")
            if sep and key.startswith("CONFIG_"):
                config[key] = value
    return config
