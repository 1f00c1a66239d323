"""The seam between the admin UI and the running mirror: ``MirrorControl``.

The web layer only talks to this protocol; ``ControlCore`` implements it
in the mirror's own process over a ``FrameProcessor`` and a ``Telemetry``.
Every method is safe to call from any request thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from appliance.config import Settings
from appliance.control.identities import IdentityLibrary
from appliance.control.log_buffer import LogEntry
from appliance.pipeline.snapshot import TelemetrySnapshot

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class HardwareInfo:
    """The hardware profile and inference backend in use, and every fallback with its reason."""

    profile: str = "unknown"
    backend: str = "unknown"
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ApplyResult:
    """Which settings keys changed, and which of them only apply at the next start."""

    changed: tuple[str, ...] = ()
    at_next_start: tuple[str, ...] = ()

    def message(self) -> str:
        if not self.changed:
            return "Saved (nothing changed)."
        if not self.at_next_start:
            return "Saved and applied."
        return "Saved. Applies at the next start: " + ", ".join(self.at_next_start) + "."


class MirrorControl(Protocol):
    """What the admin UI can read from and do to the running mirror."""

    @property
    def identities(self) -> IdentityLibrary: ...

    @property
    def swapping_enabled(self) -> bool: ...

    def snapshot(self) -> TelemetrySnapshot: ...

    def settings(self) -> Settings: ...

    def applies_live(self, key: str) -> bool:
        """Whether a change of the dotted settings ``key`` applies without a restart."""
        ...

    def apply_settings(
        self, new: Settings, *, identity: str | None = None, swapping: bool | None = None
    ) -> ApplyResult:
        """Check, save atomically, then apply between frames; a failure changes nothing.

        Raises ``ConfigError`` (a value not allowed here), ``IdentityError``
        or ``UploadError`` (the identity), ``OutputError`` (cannot save).
        """
        ...

    def active_identity(self) -> str | None:
        """The name of the identity swapped in (even while swapping is off)."""
        ...

    def set_active_identity(self, name: str) -> None: ...

    def set_swapping(self, enabled: bool) -> None: ...

    def add_identity(
        self, name: str, data: bytes, filename: str = "", content_type: str = ""
    ) -> list[str]:
        """Check, enroll and store an uploaded photo, or raise ``UploadError``/``IdentityError``;
        the hints on what would work better (``identity_check``)."""
        ...

    def rename_identity(self, old: str, new: str) -> None: ...

    def delete_identity(self, name: str) -> None: ...

    def preview_jpeg(self) -> tuple[int, bytes] | None:
        """The latest output frame as (sequence number, JPEG); None before the first."""
        ...

    def wait_preview(self, seq: int, timeout_s: float) -> int | None:
        """The latest sequence number once past ``seq`` (or after ``timeout_s``); None: stopped."""
        ...

    def hardware(self) -> HardwareInfo: ...

    def recent_logs(self) -> list[LogEntry]:
        """Recent warnings and errors, newest first."""
        ...


class WebServer(Protocol):
    """A started admin UI server: where it listens, and how to stop it."""

    @property
    def url(self) -> str: ...

    def stop(self, timeout_s: float | None = None) -> bool: ...


# Serves the admin UI over a control (and shows the first-start password with the callback).
WebStarter = Callable[["MirrorControl", Callable[[str], None] | None], WebServer]
