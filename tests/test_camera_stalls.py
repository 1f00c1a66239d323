"""A stalled camera (still there, no frames) is lost and reopened; a broken picamera2 says why.

The fakes simulate the devices: the V4L2 capture waits OpenCV's select
timeout and fails once the camera stalls, the Picamera2 camera leaves its
frame job unfinished (its wait times out) after a few frames; both recover
when opened again. The broken picamera2 is a real package on ``sys.path``
whose import raises what Debian 12's does under numpy 2.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from appliance.errors import SourceError
from appliance.media.awaited_source import AwaitedSource
from appliance.media.camera_source import CameraSource
from appliance.media.frames import Frame
from appliance.media.null_sink import NullSink
from appliance.media.picamera2_source import Picamera2Source, load_picamera2
from appliance.pipeline.runner import PipelineRunner
from appliance.pipeline.telemetry import Telemetry
from tests.test_camera_reconnect import FakeCapture, FakeDevice
from tests.test_cameras import FakeCsiCamera, csi, demo_images  # noqa: F401 (fixtures)
from tests.waiting import wait_for

SELECT_TIMEOUT_S = 0.2  # what the stalled fake V4L2 read waits before failing
STALL_S = 0.6

NUMPY_ABI = (
    "numpy.dtype size changed, may indicate binary incompatibility. "
    "Expected 96 from C header, got 88 from PyObject"
)


class StallingDevice(FakeDevice):
    """A USB camera whose capture gives ``stall_after`` frames and then none (each read
    waits the select timeout and fails), until it is opened again."""

    def __init__(self, images: list[np.ndarray], stall_after: int) -> None:
        super().__init__(images)
        self.stall_after = stall_after

    def open(self, index: int | str, api: int) -> FakeCapture:
        cap = StallingCapture(self, opened=self.present)
        self.opened += int(self.present)
        self.captures.append(cap)
        return cap


class StallingCapture(FakeCapture):
    def __init__(self, device: StallingDevice, opened: bool) -> None:
        super().__init__(device, opened)
        self.stall_after = device.stall_after
        self.delivered = 0

    def read(self) -> tuple[bool, Any]:
        if self.delivered >= self.stall_after:
            time.sleep(SELECT_TIMEOUT_S)  # select() timed out
            return False, None
        self.delivered += 1
        return super().read()


class Pass:
    def process(self, frame: Frame) -> Frame:
        return frame


def _reopened_after_stall(camera: Any, opened: Any, telemetry: Telemetry, sink: NullSink) -> None:
    with PipelineRunner(camera, Pass(), [sink], telemetry):
        assert wait_for(lambda: not telemetry.snapshot().camera.connected, 10.0)
        assert wait_for(lambda: opened() >= 2, 10.0), "the stalled camera was never reopened"
        assert wait_for(lambda: telemetry.snapshot().camera.connected, 10.0)
        before = sink.frames_written
        assert wait_for(lambda: sink.frames_written >= before + 3, 10.0)


def test_a_stalled_v4l2_camera_is_lost_reopened_and_frames_resume(
    demo_images: list[np.ndarray],  # noqa: F811
) -> None:
    device = StallingDevice(demo_images, stall_after=10)
    camera = CameraSource(0, size=(320, 240), capture_factory=device.open, stall_s=STALL_S)
    telemetry = Telemetry()
    _reopened_after_stall(camera, lambda: device.opened, telemetry, NullSink())
    assert device.captures[0].released
    snap = telemetry.snapshot()
    reasons = [t.reason for t in snap.transitions if t.subject == "camera"]
    assert any("no frame" in r or "stalled" in r for r in reasons), reasons


def test_a_stalled_v4l2_read_is_a_timeout_then_a_lost_camera(
    demo_images: list[np.ndarray],  # noqa: F811
) -> None:
    device = StallingDevice(demo_images, stall_after=1)
    with CameraSource(0, capture_factory=device.open, stall_s=STALL_S) as camera:
        assert camera.read(0.1) is not None
        kinds = []
        began = time.monotonic()
        while time.monotonic() - began < 5:
            try:
                camera.read(0.1)
            except SourceError as exc:
                kinds.append(type(exc).__name__)
                if "stalled" in str(exc):
                    break
        assert kinds[0] == "FrameTimeoutError" and kinds[-1] == "SourceError", kinds
        assert camera.read(0.1) is not None  # opened again
    assert device.opened == 2


def test_opencv_v4l2_waits_at_most_a_second_for_a_frame() -> None:
    """OpenCV's own wait is 10 s, during which a stop or a reopen cannot happen."""
    assert "OPENCV_VIDEOIO_V4L_SELECT_TIMEOUT" in os.environ
    assert int(os.environ["OPENCV_VIDEOIO_V4L_SELECT_TIMEOUT"]) <= 2


def test_a_stalled_csi_camera_is_lost_reopened_and_frames_resume(csi: FakeCsiCamera) -> None:  # noqa: F811
    csi.stall_after = 10
    camera = Picamera2Source(0, size=(320, 240), stall_s=STALL_S)
    telemetry = Telemetry()
    _reopened_after_stall(camera, lambda: csi.opened, telemetry, NullSink())
    assert camera.reconnects >= 1
    assert csi.closed >= 2  # the stalled camera was closed, and the last at stop


def test_a_slow_csi_frame_is_waited_for_once_not_asked_for_again(csi: FakeCsiCamera) -> None:  # noqa: F811
    csi.period_s = 0.25  # slower than the read timeout
    with Picamera2Source(0, size=(320, 240), stall_s=STALL_S) as camera:
        got = 0
        timeouts = 0
        began = time.monotonic()
        while got < 3 and time.monotonic() - began < 10:
            try:
                got += camera.read(0.1) is not None
            except SourceError as exc:
                assert "within" in str(exc), exc  # a timeout, never a lost camera
                timeouts += 1
    assert got == 3 and timeouts >= 3  # each read waited at most its timeout
    assert csi.jobs <= got + 1  # a frame is asked for once, however long it takes
    assert csi.opened == 1


# ---- Debian's python3-picamera2 under numpy 2 -------------------------------------------


@pytest.fixture
def broken_picamera2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    package = tmp_path / "picamera2"
    package.mkdir()
    (package / "__init__.py").write_text(
        "# what simplejpeg (built for numpy 1.x) raises at import under numpy 2\n"
        f"raise ValueError({NUMPY_ABI!r})\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "picamera2", raising=False)
    return package


@pytest.mark.usefixtures("broken_picamera2")
def test_a_picamera2_built_for_numpy_1_is_one_clear_error_naming_the_fix() -> None:
    with pytest.raises(SourceError) as caught:
        load_picamera2()
    message = str(caught.value)
    assert "numpy.dtype size changed" in message
    assert "numpy 1.x" in message and f"numpy {np.__version__}" in message
    assert "`pi` extra" in message and "Debian 13" in message


@pytest.mark.usefixtures("broken_picamera2")
def test_the_mirror_keeps_running_and_says_why_the_csi_camera_is_missing() -> None:
    camera = AwaitedSource(Picamera2Source(0, size=(320, 240)))
    telemetry = Telemetry()
    with PipelineRunner(camera, Pass(), [NullSink()], telemetry) as runner:
        assert wait_for(lambda: not telemetry.snapshot().camera.connected)
        assert runner.running
        snap = telemetry.snapshot()
    reasons = [t.reason for t in snap.transitions if t.subject == "camera"]
    assert "numpy 1.x" in reasons[0], reasons
