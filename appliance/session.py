"""One running mirror: the pipeline and everything around it, up and down in order.

Frames meet, in order: the processor (with the liveness gate for a live
camera; files and the demo photo are not live visitors, so they swap at
once), the processing chain (``pipeline.chain``: the control lock, so settings
changes land between frames; the governor's thermal action; the named fps
caps of the governor and the PIR sensor) and the adaptive controller (idle,
degrade ladder). Beside the pipeline run the thermal governor's
thread, the GPIO panel (LED, button, PIR) and the admin web server. A part
the device lacks (sensors, GPIO pins) is said once and left out; ``start``
brings everything up and ``stop`` takes every part down at once, within
``STOP_BUDGET_S`` all together (SIGTERM must end the service within 3 s).

Under systemd, ``tick`` drives the heartbeat (``appliance.supervision``):
READY once the first output sink (the display) wrote a frame, WATCHDOG
while it keeps writing them.

A part that cannot start never stops the mirror: the camera is waited for
(the capture side), the screen retried (``media.screen_guard``: frames handed
to a missing screen still count for the heartbeat), and an accelerator not in
use leaves the CPU running the models. ``tick`` reports the screen's problem
and the accelerator's (``inference.accelerator``) in telemetry's ``parts``,
for ``/healthz`` and the dashboard, and puts the accelerator's as a small
staff note on the HDMI screen, as it does safe mode (``SessionOptions.safe_mode``:
a settings file that could not be used; the control reports it as the part
"config" until staff save settings). The A/B update's progress (``media.update_note``,
from the installer's status file in the data folder) goes on the screen too, at the
edge away from the label.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from appliance.config import Settings
from appliance.control.api import HardwareInfo, WebServer, WebStarter
from appliance.control.core import ControlCore
from appliance.device.catalog import load_profiles
from appliance.eval.photo_grade import graded_enroller
from appliance.gpio.panel import GpioCallbacks, GpioPanel
from appliance.inference.accelerator import accelerator_state
from appliance.inference.fallbacks import fallbacks
from appliance.inference.runtime import RuntimeChoice
from appliance.media.display_screens import CameraLostScreen
from appliance.media.overlays import Overlays, update_corner
from appliance.media.preview_sink import WebPreviewSink
from appliance.media.sink_base import FrameSink
from appliance.media.source_base import FrameSource
from appliance.media.source_mode import SourceMode
from appliance.media.update_note import UpdateNote
from appliance.modelstore import ModelStore
from appliance.paths import data_dir
from appliance.pipeline.adaptive import AdaptiveController
from appliance.pipeline.factory import build_processor
from appliance.pipeline.presence import MOTION
from appliance.pipeline.runner import PipelineRunner
from appliance.pipeline.snapshot import TelemetrySnapshot
from appliance.pipeline.telemetry import Drop, Telemetry
from appliance.supervision.heartbeat import Heartbeat
from appliance.supervision.notify import Notifier
from appliance.thermal.action import ThermalAction
from appliance.thermal.runner import ThermalGovernor, governor_for

logger = logging.getLogger(__name__)

STOP_BUDGET_S = 2.5  # every part stopped within this, together (the runner's own stop takes 2 s)


@dataclass(frozen=True)
class SessionOptions:
    """What to run beside the pipeline."""

    identity: str | None = "grace_hopper"
    frame_limit: int | None = None
    web: WebStarter | None = None  # serves the admin UI over the control core (the CLI's)
    settings_path: Path | None = None  # where settings changes are saved
    announce: Callable[[str], None] | None = None  # shows the first-start admin password
    extra_sinks: Sequence[FrameSink] = field(default_factory=tuple)
    mode: SourceMode = SourceMode.RECORDED  # a live camera: liveness gate, camera screen
    display: FrameSink | None = None  # the HDMI screen: first output, camera-lost screen
    overlays: Overlays | None = None  # draws the screens the display shows besides the mirror
    # the one preview feed, when a preview server among extra_sinks reads it too
    preview: WebPreviewSink | None = None
    # why the settings are the defaults (the file could not be used): ``cli.safe_mode``
    safe_mode: str = ""


class MirrorSession:
    """Builds the running mirror from settings, the runtime choice and a source."""

    def __init__(
        self,
        settings: Settings,
        store: ModelStore,
        choice: RuntimeChoice,
        source: FrameSource,
        options: SessionOptions,
    ) -> None:
        self.settings = settings
        self.choice = choice
        self.options = options
        self.mode = options.mode  # decided where the source was opened
        self.live = options.mode.live
        liveness = settings.liveness if self.live else None
        processor = build_processor(
            settings, store, options.identity, runtime=choice, liveness=liveness
        )
        self.processor = processor
        self.telemetry = Telemetry()
        sinks = list(options.extra_sinks)
        self.camera_screen: CameraLostScreen | None = None
        self.update_note = UpdateNote(data_dir()) if options.overlays is not None else None
        if options.display is not None:
            sinks.insert(0, options.display)  # first: READY and WATCHDOG follow what it shows
            if options.overlays is not None:
                self.camera_screen = CameraLostScreen(
                    [options.display], options.overlays, source.size
                )
        hardware = HardwareInfo(choice.profile, choice.backend, tuple(choice.describe()))
        self.control = ControlCore.build(  # the admin UI, the GPIO button and SIGHUP use it
            processor,
            self.telemetry,
            settings,
            options.settings_path,
            store,
            hardware=hardware,
            preview=options.preview,
            # the upload's previews are graded by what they show (``eval.photo_grade``)
            enroller=graded_enroller(settings, store),
        )
        self.control.restore_state()
        if options.safe_mode:
            self.control.set_safe_mode(options.safe_mode)
        # the one chain: the control lock (settings land between frames), the thermal
        # action and the named fps caps
        self.chain = self.control.processor
        if options.web is not None or options.preview is not None:
            sinks.append(self.control.preview_sink)  # one encode per frame for every preview
        # one presence signal: the pipeline's face clock and the PIR feed it, both read it
        self.presence = self.chain.presence
        self.controller = AdaptiveController(
            self.chain, self.telemetry, settings.pipeline, presence=self.presence
        )
        self.chain.bind_caps(self.controller)
        self.runner = PipelineRunner(
            source,
            self.chain,
            sinks,
            self.telemetry,
            settings.pipeline.latency_budget_ms,
            frame_limit=options.frame_limit,
            controller=self.controller,
            # the capture side tells the display when the camera is lost or back
            on_camera=None if self.camera_screen is None else self.camera_screen.update,
        )
        self.profile = load_profiles()[choice.profile]
        self.governor: ThermalGovernor = governor_for(
            self.profile, settings, telemetry=self.telemetry, on_action=self._thermal
        )
        self.panel: GpioPanel | None = None
        self.web_url = ""
        self._server: WebServer | None = None
        self._stoppers: list[Callable[[], object]] = []
        self.heartbeat = Heartbeat(Notifier(), status=self._status_text)

    # ---- up and down -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the pipeline, then the governor, the GPIO panel and the web server."""
        self.runner.start()
        self._stoppers.append(self.runner.stop)
        self.report_parts()
        self.governor.start()
        self._stoppers.append(self.governor.stop)
        self.panel = GpioPanel.open(self.profile.gpio, self._callbacks())
        self._stoppers.append(self.panel.close)
        if self.camera_screen is not None:
            self._stoppers.append(self.camera_screen.close)
        self._stoppers.append(self.control.close)
        if self.options.web is not None:
            self._start_web(self.options.web)

    def stop(self) -> None:
        """Stop everything started, all parts at once, within ``STOP_BUDGET_S`` together.

        Each part's failure is logged, not raised; a part still busy at the
        deadline is logged and left to its (daemon) thread.
        """
        stoppers, self._stoppers = self._stoppers[::-1], []
        if not stoppers:
            return
        self.heartbeat.stop()
        deadline = time.monotonic() + STOP_BUDGET_S
        threads = [
            threading.Thread(target=_stop_part, args=(s,), name=f"mirror-stop-{i}", daemon=True)
            for i, s in enumerate(stoppers)
        ]
        for thread in threads:
            thread.start()
        for thread, stopper in zip(threads, stoppers, strict=True):
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                logger.warning("stopping %r took over %.1f s; left behind", stopper, STOP_BUDGET_S)

    def tick(self) -> None:
        """Periodic upkeep from the main thread: the parts' problems and liveness counts
        into telemetry, the status LED following the mirror's state, and systemd's heartbeat."""
        self.report_parts()
        snap = self.telemetry.snapshot()
        counts = self.processor.liveness.counts(snap.faces)
        self.telemetry.set_liveness(counts.live, counts.unverified, counts.mode)
        if self.panel is not None:
            self.panel.show(self.light(snap))
        self.heartbeat.beat(self.shown(snap))

    def report_parts(self) -> None:
        """The screen's and the accelerator's problems into telemetry ("" while they work),
        and the accelerator's as the staff note on the screen. A device without a screen
        (headless profile, ``--display none``) reports none."""
        display = self.options.display
        if display is not None:
            self.telemetry.set_part("screen", display.problem)
        accelerator = accelerator_state(self.choice, fallbacks())
        if accelerator.wanted:
            self.telemetry.set_part("accelerator", accelerator.problem, failed_state="cpu")
        overlays = self.options.overlays
        if overlays is not None:
            notes = [overlays.texts.safe_mode] if self.control.safe_mode else []
            if accelerator.problem:
                notes.append(overlays.texts.cpu_fallback.format(accelerator=accelerator.wanted))
            overlays.staff_note = " · ".join(notes)
            if self.update_note is not None:
                overlays.update_note = self.update_note.line(overlays.texts)
                label = self.control.settings().label.position
                overlays.update_corner = update_corner(label)

    def shown(self, snap: TelemetrySnapshot) -> int:
        """Frames the display (the first output sink) has written; all frames out without one.

        The display also counts the camera-lost screen. Without a display, a live camera's
        failed attempts to open (the capture thread waiting for a missing camera, backing
        off at most a second) count too, so a mirror waiting for its camera is ready and
        alive for systemd, not restarted in a loop.
        """
        if self.options.display is not None:
            return self.options.display.frames_written  # also the screens shown between frames
        names = self.runner.sink_names
        sink = snap.sinks.get(names[0]) if names else None
        written = snap.frames_out if sink is None else sink.written
        return written + (snap.error_count("capture") if self.live else 0)

    def light(self, snap: TelemetrySnapshot | None = None) -> str:
        """The status LED's state: critical, error, hot, degraded or running."""
        snap = snap or self.telemetry.snapshot()
        thermal = snap.thermal.state.upper()
        if thermal == "CRITICAL":
            return "critical"
        stopped_by_errors = snap.error_count() > 0 and not snap.running
        if not snap.camera.connected or snap.parts.get("screen") or stopped_by_errors:
            return "error"
        if thermal == "HOT" or snap.thermal.alert:
            return "hot"
        if snap.degrade_level > 0 or thermal == "WARM":
            return "degraded"
        return "running"

    # ---- internals -------------------------------------------------------------------------

    def _start_web(self, web: WebStarter) -> None:
        server = web(self.control, self.options.announce)
        self._server = server
        self.web_url = server.url
        self._stoppers.append(server.stop)

    def _status_text(self) -> str:
        snap = self.telemetry.snapshot()
        return (
            f"{snap.output_fps:.1f} fps, {snap.mode}, {snap.quality}, "
            f"thermal {snap.thermal.state.lower()}, light {self.light(snap)}"
        )

    def _thermal(self, action: ThermalAction) -> None:
        self.chain.set_action(action)
        self.chain.set_cap("thermal", action.fps_cap, Drop.THERMAL)

    def _callbacks(self) -> GpioCallbacks:
        return GpioCallbacks(
            next_identity=self._next_identity,
            toggle_swapping=self._toggle_swapping,
            wake=lambda: self._motion(True),
            idle=lambda: self._motion(False),
        )

    def _motion(self, present: bool) -> None:
        """The PIR sensor: nobody for a while idles processing and shows the idle screen."""
        self.presence.report(MOTION, present, "" if present else "no motion (PIR)")
        idle_fps = None if present else self.settings.pipeline.idle_fps
        self.chain.set_cap("no motion", idle_fps, Drop.NO_MOTION)

    @property
    def nobody(self) -> bool:
        """Nobody there: the PIR saw no motion, or no face was seen, for a while."""
        return self.presence.nobody

    def _next_identity(self) -> None:
        """The button's short press: the library's next identity (the first after the last)."""
        names = self.control.identities.names()
        if not names:
            logger.info("button: no identities in the library to cycle through")
            return
        current = self.control.active_identity()
        following = names[(names.index(current) + 1) % len(names)] if current in names else names[0]
        self.control.set_active_identity(following)

    def _toggle_swapping(self) -> None:
        """The button's long press: swapping off, or back on."""
        self.control.set_swapping(not self.control.swapping_enabled)


def _stop_part(stopper: Callable[[], object]) -> None:
    try:
        stopper()
    except Exception as exc:
        logger.warning("stopping %r failed: %s", stopper, exc)
