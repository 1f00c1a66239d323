"""``ControlCore``: the mirror's control state, one per running mirror.

The session always builds it; the admin UI (``web_ui``), the GPIO button and
``mirror run``'s SIGHUP reload are thin clients of it (it implements
``MirrorControl``). It owns the processing chain (a ``ProcessingChain`` around
the pipeline's ``FrameProcessor``, with the processor lock: give
``control.processor`` to the runner),
the active identity and the swapping switch (kept in ``state.json``), the
identity library and enrolment, the settings applied live, the web preview
sink and the event log.
Changes are checked first, saved atomically, then applied between frames;
a change that fails at any step before the apply changes nothing, with one
exception: swapping turned off (the dashboard's switch, the settings page, the
button) applies even when it cannot be saved (a read-only or full data folder),
and says so. Turning it on is refused then: a switch that silently reverts at
the next restart would surprise staff, and turning on is never urgent.
A save writes only the settings keys changed (``config.save_changes``); a
page's save merges what that page changed (``control.edits``).
``safe_mode``: why the mirror runs on the defaults (its settings file could
not be used, ``cli.safe_mode``), shown as the telemetry part "config" until
staff save settings or a good file is reloaded.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from appliance.config import Settings, save_changes
from appliance.control.api import ApplyResult, HardwareInfo, SettingsView, SwitchResult
from appliance.control.edits import ViewHistory, merge
from appliance.control.enrollment import Enroller
from appliance.control.identities import IdentityLibrary, check_name
from appliance.control.live_apply import Applier, applies_live, apply_live, changed_keys
from appliance.control.log_buffer import LogBuffer, LogEntry
from appliance.control.state import MirrorState, load_state, save_state
from appliance.control.uploads import check_upload, stored_jpeg
from appliance.errors import ConfigError, IdentityError, OutputError, UploadError
from appliance.inference.fallbacks import fallbacks
from appliance.media.preview_sink import WebPreviewSink
from appliance.modelstore import ModelStore
from appliance.paths import data_dir, web_dir
from appliance.pipeline.chain import ProcessingChain
from appliance.pipeline.processor import FrameProcessor
from appliance.pipeline.snapshot import TelemetrySnapshot
from appliance.pipeline.telemetry import Telemetry
from appliance.vision.identity import Identity

logger = logging.getLogger(__name__)

IDENTITIES_DIR = "identities"
STATE_NAME = "state.json"
CONFIG_PART = "config"  # the telemetry part that reports safe mode


class ControlCore:
    """Reads and changes the running mirror for the admin UI (thread-safe)."""

    def __init__(
        self,
        processor: FrameProcessor,
        telemetry: Telemetry,
        settings: Settings,
        settings_path: Path | None,
        *,
        library: IdentityLibrary,
        enroller: Enroller,
        state_path: Path,
        hardware: HardwareInfo | None = None,
        preview: WebPreviewSink | None = None,
        logs: LogBuffer | None = None,
        check: Callable[[Settings], None] | None = None,
        appliers: Mapping[str, Applier] | None = None,
    ) -> None:
        self.processor = ProcessingChain(processor)
        self.preview_sink = preview or WebPreviewSink()
        self._inner = processor
        self._telemetry = telemetry
        self._settings = settings
        self._settings_path = settings_path
        self._library = library
        self._enroller = enroller
        self._state_path = Path(state_path)
        self._hardware = hardware or HardwareInfo()
        self._check = check
        self._appliers = dict(appliers or {})
        self._lock = threading.RLock()
        self._identity: Identity | None = processor.identity
        self._state = MirrorState(None, True)
        self._history = ViewHistory()
        self._safe_mode = ""
        self._own_logs = logs is None
        self._logs = logs or LogBuffer()
        if self._own_logs:
            self._logs.attach()

    @classmethod
    def build(
        cls,
        processor: FrameProcessor,
        telemetry: Telemetry,
        settings: Settings,
        settings_path: Path | None,
        store: ModelStore,
        *,
        base: Path | None = None,
        hardware: HardwareInfo | None = None,
        preview: WebPreviewSink | None = None,
        enroller: Enroller | None = None,
    ) -> ControlCore:
        """The usual layout: ``<data dir>/identities`` and ``<data dir>/web/state.json``;
        ``enroller``: the upload's (one built from ``store`` when None)."""
        base = base or data_dir()
        return cls(
            processor,
            telemetry,
            settings,
            settings_path,
            library=IdentityLibrary(base / IDENTITIES_DIR),
            enroller=enroller or Enroller.from_store(settings, store),
            state_path=web_dir(base) / STATE_NAME,
            hardware=hardware,
            preview=preview,
        )

    def close(self) -> None:
        if self._own_logs:
            self._logs.detach()

    def __enter__(self) -> ControlCore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- state kept across restarts -------------------------------------------------------

    def restore_state(self) -> None:
        """Swap in the saved active identity and swapping switch (call once, before running)."""
        with self._lock:
            saved = load_state(self._state_path)
            identity = self._identity
            active = None
            if saved.active is not None:
                try:
                    identity, active = self._load_identity(saved.active), saved.active
                except Exception as exc:  # a deleted or broken photo must not stop the mirror
                    logger.warning("saved identity %r not used: %s", saved.active, exc)
            state = MirrorState(active, saved.swapping)
            try:
                self._save_state(state)
            except OutputError as exc:  # a read-only data folder must not stop the mirror
                logger.warning("UI state not saved: %s", exc)
            self._install(identity, state)

    # ---- reading --------------------------------------------------------------------------

    @property
    def identities(self) -> IdentityLibrary:
        return self._library

    @property
    def swapping_enabled(self) -> bool:
        return self._state.swapping

    def snapshot(self) -> TelemetrySnapshot:
        return self._telemetry.snapshot()

    def settings(self) -> Settings:
        return self._settings

    def applies_live(self, key: str) -> bool:
        return applies_live(key, self._appliers)

    def active_identity(self) -> str | None:
        identity = self._identity
        return None if identity is None else identity.name

    def settings_view(self, version: str | None = None) -> SettingsView | None:
        with self._lock:
            current = self._view()
            if version is None or version == current.version:
                self._history.remember(current)
                return current
            return self._history.find(version)

    @property
    def safe_mode(self) -> str:
        """Why the mirror runs on the default settings ("": it does not)."""
        return self._safe_mode

    def set_safe_mode(self, problem: str) -> None:
        """Enter safe mode with ``problem`` (the settings file could not be used), or leave
        it (""); telemetry's part "config" says it to the dashboard, /healthz and /metrics."""
        with self._lock:
            if problem == self._safe_mode:
                return
            self._safe_mode = problem
            self._telemetry.set_part(CONFIG_PART, problem, failed_state="safe mode")
        if problem:
            logger.warning("safe mode: %s", problem)
        else:
            logger.info("safe mode ended: the settings are saved or reloaded")

    def preview_jpeg(self) -> tuple[int, bytes] | None:
        return self.preview_sink.hub.jpeg()

    def wait_preview(self, seq: int, timeout_s: float) -> int | None:
        return self.preview_sink.hub.wait_newer(seq, timeout_s)

    def hardware(self) -> HardwareInfo:
        notes = self._hardware.notes + tuple(f.describe() for f in fallbacks())
        return dataclasses.replace(self._hardware, notes=notes)

    def recent_logs(self) -> list[LogEntry]:
        return self._logs.entries()

    # ---- changing -------------------------------------------------------------------------

    def apply_settings(
        self,
        new: Settings,
        *,
        identity: str | None = None,
        swapping: bool | None = None,
        save: bool = True,
        base: str | None = None,
    ) -> ApplyResult:
        """Apply ``new``; ``save=False`` when it was just read from the settings file;
        ``base``: the version of the view the change was made on (``MirrorControl``)."""
        with self._lock:
            if base is not None:
                merged = merge(self.settings_view(base), self._view(), new, identity, swapping)
                new, identity, swapping = merged.settings, merged.identity, merged.swapping
            if self._check is not None:
                self._check(new)
            changed = changed_keys(self._settings, new)
            enrolled = self._identity
            state = self._state
            if identity is not None and identity != state.active:
                enrolled, state = (
                    self._load_identity(identity),
                    dataclasses.replace(state, active=identity),
                )
            if swapping is not None:
                state = dataclasses.replace(state, swapping=swapping)
            self._save(new, changed if save else [], state)
            with self.processor.lock:
                apply_live(self._inner, new, changed, self._appliers)
                self._settings = new
            self._install(enrolled, state)
            if changed:
                self._enroller.configure(new)
            if changed and save:
                self.set_safe_mode("")  # staff chose settings: the file is theirs now
        later = tuple(key for key in changed if not self.applies_live(key))
        if changed:
            logger.info("settings changed: %s", ", ".join(changed))
        return ApplyResult(tuple(changed), later)

    def set_active_identity(self, name: str) -> None:
        with self._lock:
            identity = self._load_identity(name)
            state = dataclasses.replace(self._state, active=name)
            self._save_state(state)
            self._install(identity, state)
        logger.info("active identity: %s", name)

    def set_swapping(self, enabled: bool) -> SwitchResult:
        with self._lock:
            state = dataclasses.replace(self._state, swapping=enabled)
            not_saved = ""
            try:
                self._save_state(state)
            except OutputError as exc:
                if enabled:
                    raise  # nothing changed: on is never urgent
                not_saved = str(exc)  # the off switch works, saved or not
            self._install(self._identity, state)
        if not_saved:
            logger.warning("swapping off, but not saved (%s)", not_saved)
        else:
            logger.info("swapping %s", "on" if enabled else "off")
        return SwitchResult(enabled, not_saved)

    def add_identity(
        self, name: str, data: bytes, filename: str = "", content_type: str = ""
    ) -> list[str]:
        check_name(name)
        self._library.check_free(name)
        image, photo = stored_jpeg(check_upload(data, filename, content_type))
        assessment = self._enroller.check(image)
        identity = self._enroller.enroll(image, name)
        preview = self._enroller.preview(identity)
        if preview.graded is not None:  # what the swap will look like (the ``result`` check)
            assessment = assessment.with_finding(preview.graded.finding)
            if assessment.refused:
                raise UploadError("; ".join(assessment.reasons()))
        self._library.add(name, photo, preview.jpeg)
        return assessment.hints()

    def rename_identity(self, old: str, new: str) -> None:
        with self._lock:
            self._library.rename(old, new)
            if self._state.active == old:
                identity = self._identity
                if identity is not None and identity.name == old:
                    identity = dataclasses.replace(identity, name=new)
                state = dataclasses.replace(self._state, active=new)
                self._save_state(state)
                self._install(identity, state)

    def delete_identity(self, name: str) -> None:
        with self._lock:
            if self._state.active == name:
                raise IdentityError(
                    f"{name!r} is the active identity: make another one active first"
                )
            self._library.delete(name)

    # ---- internals ------------------------------------------------------------------------

    def _load_identity(self, name: str) -> Identity:
        return self._enroller.enroll_file(self._library.photo_path(name), name)

    def _view(self) -> SettingsView:
        return SettingsView(self._settings, self.active_identity(), self._state.swapping)

    def _save_state(self, state: MirrorState) -> None:
        if state != self._state:
            save_state(self._state_path, state)

    def _save(self, settings: Settings, keys: list[str], state: MirrorState) -> None:
        """Save ``state`` and the settings ``keys``, or neither: on a failure only swapping
        turned off is applied (unsaved), and the error says so."""
        previous = self._state
        try:
            self._save_state(state)
            try:
                if keys and self._settings_path is None:
                    raise ConfigError("this mirror has no settings file to save changes to")
                if keys and self._settings_path is not None:
                    save_changes(self._settings_path, settings, keys)
            except (OutputError, ConfigError):
                self._restore_state(state, previous)
                raise
        except (OutputError, ConfigError) as exc:
            if not (previous.swapping and not state.swapping):
                raise
            self._install(self._identity, dataclasses.replace(previous, swapping=False))
            logger.warning("swapping off, but nothing saved (%s)", exc)
            raise type(exc)(
                f"{exc}. Swapping is off all the same (not saved: after a restart it is as it "
                "was last saved); nothing else was changed"
            ) from exc

    def _restore_state(self, saved: MirrorState, previous: MirrorState) -> None:
        """Put the state file back as it was (the settings that went with it failed)."""
        if saved == previous:
            return
        try:
            save_state(self._state_path, previous)
        except OutputError as exc:
            logger.warning("UI state file left with the unsaved change: %s", exc)

    def _install(self, identity: Identity | None, state: MirrorState) -> None:
        """Swap ``identity`` in (or out) between frames (``state`` saved by the caller)."""
        with self.processor.lock:
            self._inner.identity = identity if state.swapping else None
        self._identity = identity
        self._state = state
