"""The whole running mirror as `mirror run` builds it: pipeline, liveness, thermal, GPIO.

A live camera (a fake V4L2 device replaying a photo's frames, as a printed
photo held up to the camera would look) gets the liveness gate, so nothing is
swapped and the prompt shows; the demo source is not a live visitor and is
swapped at once. A thermal action from the governor caps the processing rate
and shows in telemetry; this machine has no GPIO and runs without it.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from appliance.config import Settings
from appliance.inference.runtime import choose_for_device
from appliance.media.awaited_source import AwaitedSource
from appliance.media.camera_source import CameraSource
from appliance.media.demo_source import DemoSource
from appliance.media.null_sink import NullSink
from appliance.media.overlays import Overlays
from appliance.media.source_mode import SourceMode
from appliance.modelstore import ModelStore
from appliance.session import MirrorSession, SessionOptions
from appliance.thermal.action import ThermalAction, action_for
from appliance.thermal.governor import ThermalState
from tests.test_camera_reconnect import FakeDevice
from tests.waiting import wait_for
from web_ui.status import camera_problem


def session_for(
    store: ModelStore,
    source: object,
    frames: int | None = None,
    mode: SourceMode = SourceMode.RECORDED,
) -> MirrorSession:
    choice = choose_for_device(store, override="x86-cpu")
    options = SessionOptions(identity="grace_hopper", frame_limit=frames, mode=mode)
    return MirrorSession(Settings(), store, choice, source, options)  # type: ignore[arg-type]


def test_the_demo_is_swapped_without_liveness_and_runs_without_gpio(
    store: ModelStore, astronaut: np.ndarray
) -> None:
    source = DemoSource(astronaut, size=(640, 480), paced=True, fps=30.0, frames=45)
    session = session_for(store, source)
    assert not session.live
    session.start()
    try:
        assert session.runner.wait(30.0)
        session.tick()
        snap = session.telemetry.snapshot()
    finally:
        session.stop()
    # Every frame shown is swapped (how many are shown depends on the machine's load:
    # stale frames are dropped, never shown).
    assert snap.frames_out >= 10 and snap.swapped >= snap.frames_out - 2, snap
    assert snap.liveness.mode == "none"
    assert session.panel is not None and not session.panel.active
    assert session.light(snap) in ("running", "degraded")


def test_a_photo_held_to_the_camera_is_not_swapped_and_gets_the_prompt(
    store: ModelStore, astronaut: np.ndarray
) -> None:
    with DemoSource(astronaut, size=(320, 240), paced=False, frames=30) as demo:
        device = FakeDevice([f.image for f in demo])
    camera = CameraSource(0, size=(320, 240), fps=30, capture_factory=device.open)
    session = session_for(store, camera, frames=60, mode=SourceMode.LIVE_CAMERA)
    assert session.live
    session.start()
    try:
        assert session.runner.wait(30.0)
        session.tick()
        snap = session.telemetry.snapshot()
    finally:
        session.stop()
    assert snap.frames_out > 20 and snap.swapped == 0  # a photo never turns LIVE
    assert snap.liveness.mode == "either" and snap.liveness.unverified == 1


def test_a_hot_device_caps_the_rate_and_shows_it(store: ModelStore, astronaut: np.ndarray) -> None:
    source = DemoSource(astronaut, size=(640, 480), paced=True, fps=30.0)
    session = session_for(store, source)
    session.start()
    try:
        session._thermal(action_for(ThermalState.HOT, session.settings))
        assert wait_for(lambda: session.telemetry.snapshot().drops.get("thermal", 0) > 10, 20.0)
        time.sleep(0.5)
    finally:
        session.stop()
    assert isinstance(session.chain.action, ThermalAction)
    assert session.chain.action.state is ThermalState.HOT


@pytest.mark.parametrize("state", [ThermalState.CRITICAL])
def test_the_light_follows_the_thermal_state(store: ModelStore, state: ThermalState) -> None:
    source = DemoSource(np.full((240, 320, 3), 90, np.uint8), size=(320, 240), frames=5)
    session = session_for(store, source)
    session.telemetry.set_thermal(state.label, 85.0, "test")
    assert session.light() == "critical"


def test_no_motion_idles_processing_and_motion_wakes_it(store: ModelStore) -> None:
    source = DemoSource(np.full((240, 320, 3), 90, np.uint8), size=(320, 240), frames=5)
    session = session_for(store, source)
    session._motion(False)  # the PIR callback after T s without motion
    assert session.nobody and session.controller._cap_ns > 0
    session._motion(True)
    assert not session.nobody and session.controller._cap_ns == 0


def test_a_camera_missing_at_start_shows_the_camera_screen_and_is_picked_up_when_it_appears(
    store: ModelStore, astronaut: np.ndarray
) -> None:
    """`mirror run --source camera` before the USB camera enumerates: the session starts,
    the display shows the camera screen (which feeds READY and the watchdog), and the
    camera's frames flow once it is plugged in."""
    with DemoSource(astronaut, size=(320, 240), paced=False, frames=30) as demo:
        device = FakeDevice([f.image for f in demo])
    device.present = False  # not plugged in yet
    camera = AwaitedSource(CameraSource(0, size=(320, 240), fps=30, capture_factory=device.open))
    display = NullSink()
    choice = choose_for_device(store, override="x86-cpu")
    options = SessionOptions(
        identity="grace_hopper",
        mode=SourceMode.LIVE_CAMERA,
        display=display,
        overlays=Overlays(store.path("label_font")),
    )
    session = MirrorSession(Settings(), store, choice, camera, options)
    assert session.live
    session.start()
    try:
        assert wait_for(lambda: _ticked(session) and display.frames_written >= 3, 10.0)
        snap = session.telemetry.snapshot()
        assert not snap.camera.connected and snap.frames_in == 0
        screen = session.camera_screen
        assert screen is not None and screen.feed.showing
        assert session.light(snap) == "error"
        assert "/dev/video0" in camera_problem(snap)
        time.sleep(1.0)  # a few seconds after power-on, the camera enumerates
        device.present = True
        assert wait_for(lambda: _ticked(session) and session.telemetry.snapshot().frames_in > 10)
        assert wait_for(lambda: _ticked(session) and not screen.feed.showing)
        snap = session.telemetry.snapshot()
    finally:
        session.stop()
    assert snap.camera.connected and snap.frames_out > 0
    assert session.runner.end_reason == "stop requested"


def test_the_camera_screen_follows_the_capture_sides_events_without_the_main_thread(
    store: ModelStore, astronaut: np.ndarray
) -> None:
    """Nobody calls ``tick()`` here: the capture thread's "camera lost" shows the camera
    screen on the display and "camera back" hides it before the camera's frames flow."""
    with DemoSource(astronaut, size=(320, 240), paced=False, frames=30) as demo:
        device = FakeDevice([f.image for f in demo])
    device.present = False
    camera = AwaitedSource(CameraSource(0, size=(320, 240), fps=30, capture_factory=device.open))
    display = NullSink()
    options = SessionOptions(
        mode=SourceMode.LIVE_CAMERA, display=display, overlays=Overlays(store.path("label_font"))
    )
    choice = choose_for_device(store, override="x86-cpu")
    session = MirrorSession(Settings(), store, choice, camera, options)
    screen = session.camera_screen
    assert screen is not None
    session.start()
    try:
        assert wait_for(lambda: screen.feed.showing and display.frames_written >= 3, 10.0)
        device.present = True
        assert wait_for(lambda: not screen.feed.showing, 15.0)
        assert wait_for(lambda: session.telemetry.snapshot().frames_out > 3, 15.0)
    finally:
        session.stop()
    assert screen.feed.frames_shown >= 3


def _ticked(session: MirrorSession) -> bool:
    session.tick()
    return True


def test_reloading_the_settings_file_applies_live_keys_between_frames(
    store: ModelStore, astronaut: np.ndarray, tmp_path: Path
) -> None:
    from appliance.settings_reload import reload_settings

    config = tmp_path / "config.yaml"
    source = DemoSource(astronaut, size=(320, 240), paced=True, fps=30.0, frames=None)
    session = session_for(store, source)
    session.start()
    try:
        config.write_text('label:\n  text: "Synthetic face"\npipeline:\n  latency_budget_ms: 300\n')
        text = reload_settings(session, config)
        assert text.startswith(f"settings reloaded from {config}: label.text")
        assert "(pipeline.latency_budget_ms at the next start)" in text
        assert session.processor.labeler.text == "AI-generated · Synthetic face"  # disclosed
        assert session.settings.label.text == "Synthetic face"
        config.write_text("label:\n  text: [not, text]\n")
        text = reload_settings(session, config)
        assert text.startswith("settings not reloaded, the last good ones stay in force")
        assert session.processor.labeler.text == "AI-generated · Synthetic face"
        text = reload_settings(session, tmp_path / "gone.yaml")  # no file: the defaults
        assert "label.text" in text and session.processor.labeler.text == Settings().label.text
        assert wait_for(lambda: session.telemetry.snapshot().frames_out > 3, 20.0)
    finally:
        session.stop()
    assert config.read_text() == "label:\n  text: [not, text]\n"  # never written


def test_one_presence_signal_for_the_face_clock_and_the_pir(store: ModelStore) -> None:
    """The pipeline's no-face idle and the PIR's no motion feed one "is anybody there"
    signal that the chain and the adaptive controller both read."""
    blank = np.full((240, 320, 3), 90, np.uint8)  # nobody in view
    source = DemoSource(blank, size=(320, 240), paced=True, fps=30.0, frames=90)
    settings = Settings().model_copy(
        update={"pipeline": Settings().pipeline.model_copy(update={"idle_after_s": 0.5})}
    )
    choice = choose_for_device(store, override="x86-cpu")
    session = MirrorSession(settings, store, choice, source, SessionOptions(identity=None))
    presence = session.presence
    assert session.controller.presence is presence and session.chain.presence is presence
    assert not presence.nobody
    session.start()
    try:
        assert wait_for(lambda: presence.absent("faces"), 20.0)
        assert session.nobody and set(presence.reasons()) == {"faces"}
        session._motion(False)  # the PIR: no motion either
        assert set(presence.reasons()) == {"faces", "motion"}
        session._motion(True)
        assert presence.reasons().keys() == {"faces"} and session.nobody
    finally:
        session.stop()
