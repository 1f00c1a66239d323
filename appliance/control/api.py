"""The seam between the admin UI and the running mirror: ``MirrorControl``.

The web layer only talks to this protocol; ``ControlCore`` implements it
in the mirror's own process over a ``FrameProcessor`` and a ``Telemetry``.
Every method is safe to call from any request thread.
"""

from __future__ import annotations

import functools
import hashlib
import json
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
class SettingsView:
    """What the settings page shows and edits: the settings, the active identity's name and
    the swapping switch; ``version`` names exactly this content (the same after a restart)."""

    settings: Settings
    identity: str | None
    swapping: bool

    @functools.cached_property
    def version(self) -> str:
        content = {
            "settings": self.settings.model_dump(mode="json"),
            "identity": self.identity,
            "swapping": self.swapping,
        }
        text = json.dumps(content, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


@dataclass(frozen=True)
class SwitchResult:
    """The swapping switch as it now is, and why it could not be saved ("" when saved)."""

    enabled: bool
    not_saved: str = ""

    def message(self) -> str:
        state = "on" if self.enabled else "off"
        if not self.not_saved:
            return f"Swapping is {state}."
        return (
            f"Swapping is {state}, but this could not be saved ({self.not_saved}): "
            f"after a restart it is as it was last saved, until the data folder can be written."
        )


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

    def settings_view(self, version: str | None = None) -> SettingsView | None:
        """The current view (``version`` None), kept so that a page made from it can be
        saved later; or the view a page was made from, None when it is no longer known."""
        ...

    def apply_settings(
        self,
        new: Settings,
        *,
        identity: str | None = None,
        swapping: bool | None = None,
        base: str | None = None,
    ) -> ApplyResult:
        """Check, save atomically (only the keys changed), then apply between frames; a
        failure changes nothing, except that swapping turned off stays off.

        ``base``: the version of the view the change was made on; then only what differs
        from that view is applied, over what was saved since. Raises ``ConfigError`` (a
        value not allowed here), ``SettingsConflictError`` (a setting changed since in
        another way), ``IdentityError`` or ``UploadError`` (the identity), ``OutputError``
        (cannot save).
        """
        ...

    def active_identity(self) -> str | None:
        """The name of the identity swapped in (even while swapping is off)."""
        ...

    def set_active_identity(self, name: str) -> None: ...

    def set_swapping(self, enabled: bool) -> SwitchResult:
        """Turning off always applies, saved or not (the result says); turning on raises
        ``OutputError`` when it cannot be saved (nothing changes)."""
        ...

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
        """Recent warnings and errors, and apart from them security events (``security``), newest
        first."""
        ...


class WebServer(Protocol):
    """A started admin UI server: where it listens, and how to stop it."""

    @property
    def url(self) -> str: ...

    def stop(self, timeout_s: float | None = None) -> bool: ...


# Serves the admin UI over a control (and shows the first-start password with the callback).
WebStarter = Callable[["MirrorControl", Callable[[str], None] | None], WebServer]
