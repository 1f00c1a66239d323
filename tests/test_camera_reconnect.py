"""A camera that vanishes and comes back is reopened; the gap shows in telemetry.

The fake V4L2 device replays real frames (the demo source's) at 30 fps; it
can be unplugged (reads fail, opening fails) and plugged in again, like a
USB camera on a loose cable.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import cv2
import numpy as np
import pytest

from appliance.errors import SourceError
from appliance.media.camera_source import CameraSource
from appliance.media.demo_source import DemoSource
from appliance.media.frames import Frame
from appliance.media.null_sink import NullSink
from appliance.pipeline.runner import PipelineRunner
from appliance.pipeline.telemetry import Telemetry
from tests.waiting import wait_for

FPS = 30.0


class FakeDevice:
    """A USB camera: a loop of frames at ``fps``, which can be unplugged and plugged."""

    def __init__(self, images: list[np.ndarray], fps: float = FPS) -> None:
        self.images = images
        self.period_s = 1 / fps
        self.present = True
        self.opened = 0
        self.captures: list[FakeCapture] = []
        self._next = 0
        self._lock = threading.Lock()

    def open(self, index: int | str, api: int) -> FakeCapture:
        cap = FakeCapture(self, opened=self.present)
        self.opened += int(self.present)
        self.captures.append(cap)
        return cap

    def next_image(self) -> np.ndarray:
        with self._lock:
            image = self.images[self._next % len(self.images)]
            self._next += 1
        return image.copy()


class FakeCapture:
    """What ``cv2.VideoCapture`` does on such a device."""

    def __init__(self, device: FakeDevice, opened: bool) -> None:
        self.device = device
        self.opened = opened
        self.released = False

    def isOpened(self) -> bool:  # noqa: N802 (OpenCV's name)
        return self.opened and not self.released

    def read(self) -> tuple[bool, Any]:
        time.sleep(self.device.period_s)  # the driver waits for the next frame
        if not self.device.present or not self.isOpened():
            return False, None
        return True, self.device.next_image()

    def set(self, prop_id: int, value: float, /) -> bool:
        return True

    def get(self, prop_id: int, /) -> float:
        sizes = {cv2.CAP_PROP_FRAME_WIDTH: 320.0, cv2.CAP_PROP_FRAME_HEIGHT: 240.0}
        return sizes.get(prop_id, FPS)

    def release(self) -> None:
        self.released = True


class Marking:
    def process(self, frame: Frame) -> Frame:
        frame.faces = 1
        return frame


@pytest.fixture
def device(astronaut: np.ndarray) -> FakeDevice:
    with DemoSource(astronaut, size=(320, 240), paced=False, frames=30) as demo:
        return FakeDevice([f.image for f in demo])


def test_an_unplugged_camera_is_reopened_and_the_gap_is_in_telemetry(device: FakeDevice) -> None:
    camera = CameraSource(0, size=(320, 240), fps=FPS, capture_factory=device.open)
    telemetry = Telemetry()
    sink = NullSink()
    with PipelineRunner(camera, Marking(), [sink], telemetry):
        assert wait_for(lambda: telemetry.snapshot().frames_in >= 15)
        device.present = False
        assert wait_for(lambda: not telemetry.snapshot().camera.connected)
        time.sleep(0.5)
        written_during_gap = sink.frames_written
        device.present = True
        assert wait_for(lambda: telemetry.snapshot().camera.connected)
        before = telemetry.snapshot().frames_in
        assert wait_for(lambda: telemetry.snapshot().frames_in >= before + 15)
        snap = telemetry.snapshot()
    assert camera.reconnects == 1
    assert device.opened == 2
    assert device.captures[0].released  # the lost capture was let go
    assert all(cap.released for cap in device.captures)  # and the last one at stop
    assert snap.camera.gaps == 1
    assert 0.4 <= snap.camera.gap_s <= 10.0
    assert snap.errors["capture"]["SourceError"] >= 2  # the failed read and failed reopenings
    changes = [t.to_state for t in snap.transitions if t.subject == "camera"]
    assert changes == ["disconnected", "connected"]
    assert sink.frames_written > written_during_gap


def test_a_camera_gone_for_good_keeps_failing_clearly(device: FakeDevice) -> None:
    camera = CameraSource("/dev/video0", size=(320, 240), fps=FPS, capture_factory=device.open)
    with camera:
        assert camera.read(1.0) is not None
        device.present = False
        with pytest.raises(SourceError, match="stopped delivering"):
            camera.read(1.0)
        with pytest.raises(SourceError, match="/dev/video0"):
            camera.read(1.0)
        device.present = True
        assert camera.read(1.0) is not None
    assert camera.reconnects == 1
