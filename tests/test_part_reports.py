"""The parts that cannot start, reported while the rest runs: the screen and the accelerator.

The accelerator's state is read from the real runtime choice on this
GPU-less, TPU-less machine (the x86-nvidia and Coral profiles fall back to
the CPU) and from fallbacks as the model loaders record them; the session
puts both parts into telemetry, the HDMI screen gets a small staff note
beside (never over) the AI label, and /healthz, the dashboard, /api/status
and /metrics say what is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from flask import Flask
from prometheus_client.parser import text_string_to_metric_families

from appliance.config import LabelPosition, LabelSettings, Settings
from appliance.device.profile import DisplaySpec
from appliance.inference.accelerator import AcceleratorState, accelerator_state
from appliance.inference.fallbacks import Fallback
from appliance.inference.runtime import choose_for_device
from appliance.inference.select import Attempt
from appliance.media.demo_source import DemoSource
from appliance.media.display import open_display
from appliance.media.display_screens import FirstBootScreen
from appliance.media.frames import Frame
from appliance.media.overlays import Overlays
from appliance.media.sink_base import FrameSink
from appliance.modelstore import ModelStore
from appliance.pipeline.liveness_stage import PROMPT_SIZE
from appliance.pipeline.telemetry import Telemetry
from appliance.session import MirrorSession, SessionOptions
from appliance.vision.label import Labeler
from tests.screen_fakes import fb_paths
from tests.test_web_support import Mirror, build_app, build_mirror, login

SCREEN_MISSING = "framebuffer /dev/fb0 not found (no screen attached?)"


class IndexedRecorder(FrameSink):
    """Keeps each frame written, by its index."""

    def __init__(self) -> None:
        super().__init__()
        self.images: dict[int, np.ndarray] = {}

    def _write(self, frame: Frame) -> None:
        self.images[frame.index] = frame.image.copy()


# ---- the accelerator's state ---------------------------------------------------------------


def test_a_profile_whose_accelerator_is_absent_runs_on_the_cpu_and_says_why(
    store: ModelStore,
) -> None:
    nvidia = choose_for_device(store, override="x86-nvidia")  # no CUDA or TensorRT here
    state = accelerator_state(nvidia, [])
    assert nvidia.backend == "onnx-cpu" and state.wanted == "tensorrt"
    assert state.problem.startswith("tensorrt not used (TensorrtExecutionProvider not in")
    assert state.problem.endswith("; running on the CPU (onnx-cpu)")
    coral = choose_for_device(store, override="rpi4-coral-usb")  # no Edge TPU here
    state = accelerator_state(coral, [])
    assert state.wanted == "edgetpu" and state.problem.startswith("edgetpu not used (")
    assert accelerator_state(choose_for_device(store, override="x86-cpu"), []) == (
        AcceleratorState()  # asks for no accelerator: nothing to miss
    )


def test_models_the_accelerator_dropped_to_the_cpu_are_named(store: ModelStore) -> None:
    """The accelerator was chosen, yet onnxruntime ran a model on the CPU (as
    ``OnnxBackend`` records it) or the Edge TPU's first invoke failed (as ``EdgeTpuBackend``
    records it): the runtime choice is made with the outcome this machine cannot give."""
    nvidia = choose_for_device(store, override="x86-nvidia")
    cuda = type(nvidia)(
        **{**nvidia.__dict__, "backend": "cuda", "attempts": (Attempt("cuda", True, "driver"),)}
    )
    recorded = [
        Fallback("face_detector_short.onnx", "TensorrtExecutionProvider", "CUDAExecutionProvider",
                 "not in this build"),
        Fallback("face_detector_short.onnx", "CUDAExecutionProvider", "CPUExecutionProvider",
                 "dropped by onnxruntime"),
        Fallback("detector model", "face_detector_short.onnx on cuda",
                 "face_detector.tflite on litert-cpu", "no ONNX variant"),
        Fallback("face_detector.tflite", "edgetpu", "litert-cpu", "first invoke failed"),
    ]  # fmt: skip
    state = accelerator_state(cuda, recorded)
    assert state == AcceleratorState(
        "cuda", "cuda chosen, but on the CPU: face_detector_short.onnx (dropped by onnxruntime)"
    )
    tpu = type(nvidia)(
        **{**nvidia.__dict__, "backend": "edgetpu", "attempts": (Attempt("edgetpu", True, "ok"),)}
    )
    assert accelerator_state(tpu, recorded).problem == (
        "edgetpu chosen, but on the CPU: face_detector.tflite (first invoke failed)"
    )
    assert accelerator_state(cuda, recorded[:1]).problem == ""  # TensorRT to CUDA: still a GPU


# ---- the staff note on the HDMI screen ------------------------------------------------------


@pytest.mark.parametrize("size", [(640, 480), (1280, 720), (1920, 1080), (1080, 1920), (320, 240)])
@pytest.mark.parametrize("position", ["top", "top-left", "bottom", "bottom-right"])
def test_the_staff_note_is_small_and_never_over_the_label_or_the_prompt(
    store: ModelStore, size: tuple[int, int], position: LabelPosition
) -> None:
    font = store.path("label_font")
    overlays = Overlays(font)
    overlays.staff_note = overlays.texts.cpu_fallback.format(accelerator="edgetpu")
    assert overlays.staff_note == "CPU only: edgetpu not in use"
    width, height = size
    image = np.zeros((height, width, 3), np.uint8)
    assert overlays.draw_staff_note(image)
    rows, cols = np.nonzero(image.any(axis=2))
    top, bottom = int(rows.min()), int(rows.max()) + 1
    assert cols.min() == 0 and cols.max() < width // 2  # at the left edge
    assert (bottom - top) <= max(0.05 * min(width, height), 24)  # small
    other_edge: LabelPosition = "bottom" if position.startswith("top") else "top"
    largest = 0.25  # LabelSettings.size_fraction's bound; the prompt's size is fixed
    drawn = (("AI-generated", position, largest), ("AI合成 " * 8, position, largest),
             ("Blink to start", other_edge, PROMPT_SIZE))  # fmt: skip
    for text, where, fraction in drawn:
        label = Labeler(LabelSettings(text=text, position=where, size_fraction=fraction), font)
        _, y0, _, y1 = label.region(image.shape)
        assert y1 <= top or y0 >= bottom, (text, where, (y0, y1), (top, bottom))


def test_the_staff_note_goes_on_the_screen_only(store: ModelStore, tmp_path: Path) -> None:
    overlays = Overlays(store.path("label_font"))
    screen = IndexedRecorder()
    display = FirstBootScreen(screen, overlays, tmp_path / "no-notice.txt", 8000)
    mirror = np.full((480, 640, 3), 90, np.uint8)
    with display:
        display.write(Frame(mirror, 0, 0))
        overlays.staff_note = "CPU only: tensorrt not in use"
        display.write(Frame(mirror, 1, 1))
    assert np.array_equal(screen.images[0], mirror)
    noted = screen.images[1]
    changed = np.nonzero((noted != mirror).any(axis=2))
    assert changed[0].size > 0 and changed[0].min() > 200 and changed[0].max() < 280
    assert (mirror == 90).all()  # the frame the other outputs get is left as it was


# ---- the session reports both parts -------------------------------------------------------


@pytest.fixture
def missing_screen_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MIRROR_DISPLAY_ROOT", str(tmp_path))
    return tmp_path


def test_the_session_reports_a_missing_screen_and_the_cpu_fallback_while_frames_flow(
    store: ModelStore, grace_hopper: np.ndarray, missing_screen_root: Path, tmp_path: Path
) -> None:
    choice = choose_for_device(store, override="x86-nvidia")
    source = DemoSource(grace_hopper, size=(320, 240), paced=True, fps=30.0, frames=30)
    overlays = Overlays(store.path("label_font"))
    guard = open_display(DisplaySpec(kind="framebuffer"))
    assert guard is not None
    display = FirstBootScreen(guard, overlays, tmp_path / "no-notice.txt", 8000)
    options = SessionOptions(display=display, overlays=overlays)
    session = MirrorSession(Settings(), store, choice, source, options)
    session.start()  # the screen cannot open: nothing raises
    try:
        assert session.runner.wait(60.0)
    finally:
        session.stop()
    snap = session.telemetry.snapshot()
    device, _ = fb_paths(missing_screen_root)
    assert snap.parts["screen"] == f"framebuffer {device} not found (no screen attached?)"
    assert snap.parts["accelerator"].startswith("tensorrt not used")
    assert overlays.staff_note == "CPU only: tensorrt not in use"
    assert session.shown(snap) == display.frames_written > 0  # the heartbeat follows frames
    assert session.light(snap) == "error"
    subjects = {(t.subject, t.to_state) for t in snap.transitions}
    assert {("screen", "missing"), ("accelerator", "cpu")} <= subjects


def test_a_session_on_a_screen_that_works_reports_it_working(
    store: ModelStore, grace_hopper: np.ndarray, tmp_path: Path
) -> None:
    choice = choose_for_device(store, override="x86-cpu")
    source = DemoSource(grace_hopper, size=(320, 240), paced=True, fps=30.0, frames=20)
    overlays = Overlays(store.path("label_font"))
    screen = IndexedRecorder()
    display = FirstBootScreen(screen, overlays, tmp_path / "no-notice.txt", 8000)
    session = MirrorSession(
        Settings(), store, choice, source, SessionOptions(display=display, overlays=overlays)
    )
    session.start()
    try:
        assert session.runner.wait(60.0)
    finally:
        session.stop()
    snap = session.telemetry.snapshot()
    assert snap.parts == {"screen": ""}  # x86-cpu asks for no accelerator
    assert overlays.staff_note == "" and screen.images
    assert not [t for t in snap.transitions if t.subject == "screen"]


# ---- /healthz, the dashboard, /api/status, /metrics -----------------------------------------


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mirror]:
    built = build_mirror(tmp_path_factory.mktemp("parts"))
    built.telemetry.set_running(True, "test")
    yield built
    built.control.close()


@pytest.fixture(scope="module")
def app(mirror: Mirror) -> Flask:
    return build_app(mirror)


def test_healthz_names_a_missing_screen_and_notes_the_cpu_fallback(
    app: Flask, mirror: Mirror
) -> None:
    anonymous = app.test_client()
    telemetry = mirror.telemetry
    telemetry.set_part("screen", SCREEN_MISSING)
    response = anonymous.get("/healthz")
    assert response.status_code == 503 and response.json == {
        "status": "degraded",
        "running": True,
        "reason": f"screen missing: {SCREEN_MISSING}",
    }
    telemetry.camera_lost("camera /dev/video9 not found (is it plugged in?)")
    both = anonymous.get("/healthz").json
    assert both is not None and both["reason"] == (
        "camera missing: camera /dev/video9 not found (is it plugged in?); "
        f"screen missing: {SCREEN_MISSING}"
    )
    telemetry.camera_ok()
    telemetry.set_part("screen", "")  # plugged in
    telemetry.set_part("accelerator", "edgetpu not used (no TPU); running on the CPU", "cpu")
    try:
        response = anonymous.get("/healthz")
        assert response.status_code == 200 and response.json == {
            "status": "ok",
            "running": True,
            "degraded": ["accelerator: edgetpu not used (no TPU); running on the CPU"],
        }
    finally:
        telemetry.set_part("accelerator", "")


def test_the_dashboard_and_metrics_show_the_parts(app: Flask, mirror: Mirror) -> None:
    client = app.test_client()
    login(client)
    telemetry = mirror.telemetry
    telemetry.set_part("screen", SCREEN_MISSING)
    telemetry.set_part("accelerator", "tensorrt not used (no GPU); running on the CPU", "cpu")
    try:
        html = client.get("/").text
        assert f"Screen missing: {SCREEN_MISSING}." in html
        assert "Accelerator not in use: tensorrt not used (no GPU); running on the CPU." in html
        assert 'data-key="screen"' in html and 'data-key="accelerator"' in html
        status = client.get("/api/status").json
        assert status is not None
        assert status["screen"] == "missing" and status["accelerator"] == "CPU only"
        assert status["degraded"] == ["accelerator: tensorrt not used (no GPU); running on the CPU"]
        assert status["health"] == "degraded"
        families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)}
        ok = {s.labels["part"]: s.value for s in families["mirror_part_ok"].samples}
        assert ok == {"screen": 0.0, "accelerator": 0.0}
        telemetry.set_part("screen", "")
        status = client.get("/api/status").json
        assert status is not None and status["screen"] == "shown"
        assert "Screen missing" not in client.get("/").text
    finally:
        telemetry.set_part("screen", "")
        telemetry.set_part("accelerator", "")


def test_a_part_changing_is_a_transition_with_its_reason() -> None:
    telemetry = Telemetry()
    telemetry.set_part("screen", "")  # working from the start: nothing to say
    telemetry.set_part("accelerator", "edgetpu not used (unplugged)", "cpu")
    telemetry.set_part("screen", "framebuffer /dev/fb0 failed: gone")
    telemetry.set_part("screen", "framebuffer /dev/fb0 failed: gone")  # the same: no change
    telemetry.set_part("screen", "framebuffer /dev/fb0 not found (no screen attached?)")
    telemetry.set_part("screen", "")
    snap = telemetry.snapshot()
    assert [(t.subject, t.from_state, t.to_state, t.reason) for t in snap.transitions] == [
        ("accelerator", "unknown", "cpu", "edgetpu not used (unplugged)"),
        ("screen", "ok", "missing", "framebuffer /dev/fb0 failed: gone"),
        ("screen", "missing", "missing", "framebuffer /dev/fb0 not found (no screen attached?)"),
        ("screen", "missing", "ok", "working"),
    ]
    assert snap.parts == {"screen": "", "accelerator": "edgetpu not used (unplugged)"}
    assert snap.as_dict()["parts"] == snap.parts
