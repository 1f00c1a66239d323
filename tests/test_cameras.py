"""Camera kinds from the profile: Picamera2 (a fake module), Jetson CSI (GStreamer), mirroring.

The fake ``picamera2`` module replays the demo source's frames and its
camera can vanish (capture fails, opening fails) and come back, like a CSI
camera on a loose ribbon cable; the Jetson source is driven by the V4L2
test's fake device through its capture factory.
"""

from __future__ import annotations

import sys
import threading
import types
from concurrent.futures import Future
from typing import Any

import cv2
import numpy as np
import pytest

from appliance.device.profile import CaptureSpec
from appliance.errors import ConfigError, SourceError
from appliance.media.awaited_source import AwaitedSource
from appliance.media.camera_open import open_camera
from appliance.media.camera_source import CameraSource
from appliance.media.demo_source import DemoSource
from appliance.media.frames import Frame
from appliance.media.gstreamer_csi import GStreamerCsiSource, csi_pipeline, opencv_has_gstreamer
from appliance.media.mirror_source import open_mirror_source
from appliance.media.mirrored_source import MirroredSource
from appliance.media.null_sink import NullSink
from appliance.media.picamera2_source import Picamera2Source, load_picamera2
from appliance.media.source_mode import SourceMode
from appliance.pipeline.runner import PipelineRunner
from appliance.pipeline.telemetry import Telemetry
from tests.test_camera_reconnect import FakeDevice
from tests.waiting import wait_for


class FakeCsiCamera:
    """The sensor behind the fake module: frames in a loop, present or not.

    Like Picamera2, ``capture_array(wait=False)`` gives a job (a future) that the
    next frame completes and ``wait(job, timeout)`` waits for it, raising the
    future's timeout when none came. With ``stall_after`` set, each opened camera
    gives that many frames and then none (a stalled sensor), until it is opened again.
    """

    def __init__(self, images: list[np.ndarray], period_s: float = 0.005) -> None:
        self.images = images
        self.period_s = period_s
        self.present = True
        self.stall_after: int | None = None
        self.jobs = 0  # frames asked for
        self.opened = 0
        self.closed = 0
        self.configs: list[dict[str, Any]] = []
        self._next = 0
        self._lock = threading.Lock()

    def next_image(self) -> np.ndarray:
        with self._lock:
            image = self.images[self._next % len(self.images)]
            self._next += 1
        copy: np.ndarray = np.array(image, copy=True)
        return copy

    def module(self) -> types.ModuleType:
        camera = self

        class Picamera2:
            def __init__(self, camera_num: int = 0) -> None:
                if not camera.present:
                    raise IndexError("list index out of range")  # what picamera2 raises
                camera.opened += 1
                self.running = False
                self.delivered = 0

            def create_video_configuration(self, **kwargs: Any) -> dict[str, Any]:
                return kwargs

            def configure(self, config: dict[str, Any]) -> None:
                camera.configs.append(config)

            def start(self) -> None:
                self.running = True

            def capture_array(self, name: str = "main", wait: Any = None) -> Any:
                job: Future[np.ndarray] = Future()
                camera.jobs += 1
                stalled = camera.stall_after is not None and self.delivered >= camera.stall_after
                if not stalled:  # the sensor's next frame completes the job
                    threading.Timer(camera.period_s, self._complete, (job,)).start()
                return job if wait is False else self.wait(job, None if wait is None else wait)

            def _complete(self, job: Future[np.ndarray]) -> None:
                self.delivered += 1
                job.set_result(camera.next_image())

            def wait(self, job: Future[np.ndarray], timeout: float | None = None) -> np.ndarray:
                if not camera.present or not self.running:
                    raise RuntimeError("Camera frontend has timed out!")
                return job.result(timeout=timeout)  # a stalled job times out

            def stop(self) -> None:
                self.running = False

            def close(self) -> None:
                camera.closed += 1

        module = types.ModuleType("picamera2")
        module.Picamera2 = Picamera2  # type: ignore[attr-defined]
        return module


@pytest.fixture
def demo_images(astronaut: np.ndarray) -> list[np.ndarray]:
    with DemoSource(astronaut, size=(320, 240), paced=False, frames=10) as demo:
        return [f.image for f in demo]


@pytest.fixture
def csi(demo_images: list[np.ndarray], monkeypatch: pytest.MonkeyPatch) -> FakeCsiCamera:
    camera = FakeCsiCamera(demo_images)
    monkeypatch.setitem(sys.modules, "picamera2", camera.module())
    return camera


def test_picamera2_frames_are_bgr_at_the_asked_size(csi: FakeCsiCamera) -> None:
    with Picamera2Source(0, size=(320, 240), fps=25) as camera:
        frame = camera.read(1.0)
    assert frame is not None and frame.image.shape == (240, 320, 3)
    assert np.array_equal(frame.image, csi.images[0])
    assert csi.configs[0]["main"] == {"size": (320, 240), "format": "RGB888"}
    assert csi.configs[0]["controls"] == {"FrameRate": 25.0}
    assert csi.closed == 1


def test_a_lost_csi_camera_fails_clearly_and_is_reopened(csi: FakeCsiCamera) -> None:
    with Picamera2Source(0, size=(320, 240)) as camera:
        assert camera.read(1.0) is not None
        csi.present = False
        with pytest.raises(SourceError, match="stopped delivering"):
            camera.read(1.0)
        with pytest.raises(SourceError, match="csi0 not found"):
            camera.read(1.0)
        csi.present = True
        assert camera.read(1.0) is not None
    assert camera.reconnects == 1
    assert csi.opened == 2 and csi.closed == 2


def test_a_csi_camera_gap_shows_in_telemetry_and_frames_resume(csi: FakeCsiCamera) -> None:
    camera = Picamera2Source(0, size=(320, 240))
    telemetry = Telemetry()
    sink = NullSink()
    with PipelineRunner(camera, _Pass(), [sink], telemetry):
        assert wait_for(lambda: telemetry.snapshot().frames_in >= 5)
        csi.present = False
        assert wait_for(lambda: not telemetry.snapshot().camera.connected)
        csi.present = True
        assert wait_for(lambda: telemetry.snapshot().camera.connected)
        before = sink.frames_written
        assert wait_for(lambda: sink.frames_written >= before + 5)
    assert camera.reconnects >= 1
    assert telemetry.snapshot().camera.gaps == 1


def test_without_picamera2_the_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "picamera2", None)  # import fails
    with pytest.raises(SourceError, match="python3-picamera2"):
        load_picamera2()


class _Pass:
    def process(self, frame: Frame) -> Frame:
        return frame


def test_the_jetson_csi_pipeline_string() -> None:
    assert csi_pipeline(1, (1280, 720), 30, flip_method=2) == (
        "nvarguscamerasrc sensor-id=1 ! "
        "video/x-raw(memory:NVMM),width=1280,height=720,framerate=30/1 ! "
        "nvvidconv flip-method=2 ! video/x-raw,format=BGRx ! "
        "videoconvert ! video/x-raw,format=BGR ! appsink drop=1 max-buffers=1"
    )


def test_gstreamer_support_is_read_from_the_build_information() -> None:
    yes = "  Video I/O:\n    FFMPEG:  YES\n    GStreamer:                   YES (1.20.3)\n"
    no = "  Video I/O:\n    GStreamer:                   NO\n"
    assert opencv_has_gstreamer(yes)
    assert not opencv_has_gstreamer(no)
    assert not opencv_has_gstreamer("")
    assert opencv_has_gstreamer() == ("YES" in _gstreamer_line(cv2.getBuildInformation()))


def _gstreamer_line(info: str) -> str:
    return next((line for line in info.splitlines() if "GStreamer:" in line), "")


def test_jetson_csi_source_opens_the_pipeline_and_reconnects(
    demo_images: list[np.ndarray],
) -> None:
    device = FakeDevice(demo_images)
    asked: list[int | str] = []

    def factory(pipeline: int | str, api: int) -> Any:
        asked.append(pipeline)
        return device.open(pipeline, api)

    with GStreamerCsiSource(0, size=(320, 240), fps=30, capture_factory=factory) as camera:
        assert camera.read(1.0) is not None
        device.present = False
        with pytest.raises(SourceError, match="stopped delivering"):
            camera.read(1.0)
        with pytest.raises(SourceError, match="nvarguscamerasrc"):
            camera.read(1.0)
        device.present = True
        assert camera.read(1.0) is not None
    assert camera.reconnects == 1
    assert asked[0] == csi_pipeline(0, (320, 240), 30)


def test_jetson_csi_without_gstreamer_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cv2, "getBuildInformation", lambda: "GStreamer: NO")
    with pytest.raises(SourceError, match="no GStreamer support"):
        GStreamerCsiSource(0).start()


def test_open_camera_picks_the_kind_from_the_profile(csi: FakeCsiCamera) -> None:
    assert isinstance(open_camera(CaptureSpec(device="/dev/video0")), CameraSource)
    assert isinstance(open_camera(CaptureSpec(kind="picamera2", device=0)), Picamera2Source)
    jetson = open_camera(CaptureSpec(kind="gstreamer-csi", device=1, flip_method=2))
    assert isinstance(jetson, GStreamerCsiSource) and "flip-method=2" in jetson.pipeline
    with pytest.raises(ConfigError, match="camera number"):
        open_camera(CaptureSpec(kind="picamera2", device="/dev/video0"))


def test_the_one_source_factory_mirrors_cameras_only_and_names_the_mode(
    csi: FakeCsiCamera,
) -> None:
    """The live-camera decision is made once, where the source is opened, and carried."""
    spec = CaptureSpec(kind="picamera2", device=0)
    camera = open_mirror_source("camera", spec, mirror=True)
    assert camera.mode is SourceMode.LIVE_CAMERA and camera.live
    assert isinstance(camera.source, AwaitedSource)
    assert isinstance(camera.source.inner, MirroredSource)
    assert isinstance(camera.source.inner.inner, Picamera2Source)
    usb = open_mirror_source("/dev/video0", spec, mirror=False)
    assert usb.live and isinstance(usb.source, AwaitedSource)
    assert isinstance(usb.source.inner, CameraSource)
    demo = open_mirror_source("demo", spec, mirror=True, frames=1)
    assert demo.mode is SourceMode.RECORDED and isinstance(demo.source, DemoSource)
    played = open_mirror_source("demo", spec, mirror=True, frames=1, as_camera=True)
    assert played.mode is SourceMode.LIVE_CAMERA and isinstance(played.source, DemoSource)


def test_a_mirrored_source_flips_left_to_right(csi: FakeCsiCamera) -> None:
    with MirroredSource(Picamera2Source(0, size=(320, 240))) as camera:
        frame = camera.read(1.0)
    assert frame is not None
    assert np.array_equal(frame.image, csi.images[0][:, ::-1])
    assert camera.inner.closed
