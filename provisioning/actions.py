"""One step of a provisioning plan, and how it reads in ``--dry-run``."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from appliance.modelstore.hashing import sha256_bytes
from provisioning.bundle import BundleFile
from provisioning.layout import Layout

logger = logging.getLogger(__name__)

Kind = Literal[
    "dir",
    "file",
    "once",
    "model",
    "wheel",
    "venv",
    "link",
    "switch",
    "command",
    "secret-key",
    "admin",
    "convert",
    "engines",
    "vendor",
    "package",
]
# create/update: written by apply; unchanged: already as wanted; deferred: done elsewhere.
Status = Literal["create", "update", "unchanged", "deferred"]
CHANGING = ("create", "update")


@dataclass(frozen=True)
class Action:
    kind: Kind
    target: PurePosixPath  # the device path
    status: Status
    mode: int | None = None
    data: bytes | None = None
    source: BundleFile | None = None
    names: tuple[str, ...] = ()
    note: str = ""
    commands: tuple[tuple[str, ...], ...] = ()  # venv, command: run in order by apply
    points_to: PurePosixPath | None = None  # link, switch: the symlink's target

    @property
    def changes(self) -> bool:
        return self.status in CHANGING

    def line(self) -> str:
        mode = f" {self.mode:04o}" if self.mode is not None else ""
        what = self._what()
        return f"{self.status:<9} {self.kind:<10} {self.target}{mode}{what}"

    def _what(self) -> str:
        if self.points_to is not None:
            return f" -> {self.points_to}" + (f": {self.note}" if self.note else "")
        if self.kind in ("venv", "command", "package"):
            return f" {', '.join(self.names)}" + (f": {self.note}" if self.note else "")
        if self.data is not None:
            return f" (sha256 {sha256_bytes(self.data)[:12]})"
        if self.source is not None:
            return f" from {self.source.path} (sha256 {self.source.sha256[:12]})"
        if self.names:
            return f" {', '.join(self.names)}" + (f": {self.note}" if self.note else "")
        return f": {self.note}" if self.note else ""


def file_action(layout: Layout, target: PurePosixPath, data: bytes, mode: int) -> Action:
    """Write ``data`` at ``target``: unchanged when the file already has it, with ``mode``."""
    host = layout.host(target)
    status: Status = "create"
    if host.is_file():
        same = host.read_bytes() == data and host.stat().st_mode & 0o7777 == mode
        status = "unchanged" if same else "update"
    return Action("file", target, status, mode=mode, data=data)
