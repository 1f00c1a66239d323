"""Frame sources: demo, video file, camera (with a fake device) and open_source."""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from appliance.errors import ConfigError, InputError, SourceError
from appliance.media.camera_source import CameraSource, device_index
from appliance.media.demo_source import LOOP_S, DemoSource
from appliance.media.frames import Frame
from appliance.media.source_base import FrameTimeoutError
from appliance.media.sources import open_source
from appliance.media.video_source import VideoFileSource
from tests.conftest import shared_media

ASTRONAUT_FACE = [(175, 55), (285, 55), (285, 195), (175, 195)]  # photo pixels, approximate
SYNTH_FRAMES, SYNTH_SIZE, SYNTH_FPS = 12, (160, 120), 10.0


def synth_image(i: int, size: tuple[int, int] = SYNTH_SIZE) -> np.ndarray:
    w, h = size
    img = np.zeros((h, w, 3), np.uint8)
    img[:, :, 1] = np.linspace(0, 255, w, dtype=np.uint8)[None, :]
    x = 8 + i * (w - 24) // SYNTH_FRAMES
    cv2.rectangle(img, (x, h // 4), (x + 16, 3 * h // 4), (255, 255, 255), -1)
    return img


def write_video(path: Path, frames: int = SYNTH_FRAMES, fps: float = SYNTH_FPS) -> Path:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"mp4v"), fps, SYNTH_SIZE)
    assert writer.isOpened()
    for i in range(frames):
        writer.write(synth_image(i))
    writer.release()
    return path


@pytest.fixture
def synth_video(tmp_path: Path) -> Path:
    return write_video(tmp_path / "synth.mp4")


def read_all(source: Any, limit: int = 10_000) -> list[Frame]:
    frames: list[Frame] = []
    while len(frames) < limit:
        frame = source.read()
        if frame is None:
            break
        frames.append(frame)
    return frames


def assert_stamped(frames: list[Frame]) -> None:
    indices = [f.index for f in frames]
    assert indices == list(range(indices[0], indices[0] + len(frames)))
    stamps = [f.capture_ns for f in frames]
    assert all(b > a for a, b in itertools.pairwise(stamps))


def assert_one_line(exc: BaseException, *parts: str) -> None:
    text = str(exc)
    assert "\n" not in text
    for part in parts:
        assert part in text


# ---- DemoSource --------------------------------------------------------------------------


def test_demo_frames_have_size_index_and_capture_time(astronaut: np.ndarray) -> None:
    with DemoSource(astronaut, size=(320, 240), paced=False, frames=10) as src:
        assert src.size == (320, 240)
        frames = read_all(src)
        assert src.read() is None
    assert len(frames) == 10
    for frame in frames:
        assert frame.image.shape == (240, 320, 3)
        assert frame.image.dtype == np.uint8
    assert frames[0].index == 0
    assert_stamped(frames)


def test_demo_is_deterministic_and_moves(astronaut: np.ndarray) -> None:
    with (
        DemoSource(astronaut, paced=False, frames=40) as a,
        DemoSource(astronaut, paced=False) as b,
    ):
        first, second = read_all(a), read_all(b, limit=40)
    for fa, fb in zip(first, second, strict=True):
        assert np.array_equal(fa.image, fb.image)
    diff = np.abs(first[0].image.astype(np.int16) - first[39].image.astype(np.int16))
    assert diff.mean() > 2.0
    assert not np.array_equal(first[0].image, first[1].image)


def test_demo_keeps_face_in_view_over_a_whole_loop(astronaut: np.ndarray) -> None:
    src = DemoSource(astronaut, size=(640, 480), fps=30.0, paced=False)
    w, h = src.size
    points = np.array([[[256.0, 256.0]], *[[list(p)] for p in ASTRONAUT_FACE]], np.float64)
    for index in range(round(LOOP_S * src.fps)):
        mapped = cv2.perspectiveTransform(points, src.transform(index))[:, 0, :]
        assert (mapped[:, 0] >= 0).all() and (mapped[:, 0] < w).all(), index
        assert (mapped[:, 1] >= 0).all() and (mapped[:, 1] < h).all(), index
        face_w = mapped[1:, 0].max() - mapped[1:, 0].min()
        assert 0.15 * w < face_w < 0.6 * w, index
    # the motion loops: one loop later the view is the same
    assert np.allclose(src.transform(5), src.transform(5 + round(LOOP_S * src.fps)))


def test_demo_paced_holds_the_frame_rate(astronaut: np.ndarray) -> None:
    with DemoSource(astronaut, fps=30.0, paced=True) as src:
        began = time.monotonic()
        count = 0
        while time.monotonic() - began < 1.0:
            assert src.read() is not None
            count += 1
    assert 20 <= count <= 40


def test_demo_read_times_out_when_the_next_frame_is_not_due(astronaut: np.ndarray) -> None:
    with DemoSource(astronaut, fps=2.0, paced=True) as src:
        assert src.read(timeout_s=0.05) is not None
        began = time.monotonic()
        with pytest.raises(FrameTimeoutError):
            src.read(timeout_s=0.05)
        assert time.monotonic() - began < 0.3
        frame = src.read(timeout_s=1.0)
    assert frame is not None and frame.index == 1


def test_demo_iterates_and_checks_state(astronaut: np.ndarray) -> None:
    src = DemoSource(astronaut, size=(64, 48), paced=False, frames=3)
    with pytest.raises(RuntimeError, match="start"):
        src.read()
    with src:
        assert [f.index for f in src] == [0, 1, 2]
    assert src.closed
    src.close()
    with pytest.raises(RuntimeError, match="closed"):
        src.start()


def test_demo_rejects_bad_arguments(astronaut: np.ndarray) -> None:
    with pytest.raises(InputError):
        DemoSource(astronaut[:, :, 0])
    with pytest.raises(ConfigError):
        DemoSource(astronaut, size=(0, 480))
    with pytest.raises(ConfigError):
        DemoSource(astronaut, fps=0)


# ---- VideoFileSource ---------------------------------------------------------------------


def test_video_file_gives_all_frames_of_a_synthetic_video(synth_video: Path) -> None:
    with VideoFileSource(synth_video, paced=False) as src:
        assert src.size == SYNTH_SIZE
        assert src.fps == pytest.approx(SYNTH_FPS)
        frames = read_all(src)
    assert len(frames) == SYNTH_FRAMES
    assert_stamped(frames)
    for i, frame in enumerate(frames):
        expected = synth_image(i).astype(np.int16)
        assert np.abs(frame.image.astype(np.int16) - expected).mean() < 8.0


@pytest.mark.media
def test_video_file_real_video_unpaced() -> None:
    path = shared_media("talking_man_greenscreen.mp4")
    began = time.monotonic()
    with VideoFileSource(path, paced=False) as src:
        assert src.size == (512, 512)
        assert src.fps == pytest.approx(25.0)
        frames = read_all(src)
    assert len(frames) == 78
    assert time.monotonic() - began < 78 / 25.0  # faster than real time
    assert all(f.image.shape == (512, 512, 3) for f in frames)
    assert_stamped(frames)


@pytest.mark.media
def test_video_file_real_video_loops() -> None:
    path = shared_media("talking_man_greenscreen.mp4")
    with VideoFileSource(path, paced=False, loop=True) as src:
        frames = read_all(src, limit=78 + 10)
    assert len(frames) == 88
    assert_stamped(frames)
    assert np.array_equal(frames[78].image, frames[0].image)


def test_video_file_paced_follows_the_file_rate(synth_video: Path) -> None:
    with VideoFileSource(synth_video, paced=True) as src:  # 10 fps
        began = time.monotonic()
        frames = read_all(src, limit=6)
        elapsed = time.monotonic() - began
    assert len(frames) == 6
    assert 0.35 < elapsed < 0.9


def test_video_file_restart_plays_from_the_beginning(synth_video: Path) -> None:
    src = VideoFileSource(synth_video, paced=False)
    with src:
        first = read_all(src, limit=3)
        src.stop()
        src.start()
        again = read_all(src)
    assert len(again) == SYNTH_FRAMES
    assert np.array_equal(first[0].image, again[0].image)
    assert again[0].index == 3


def test_video_file_errors_name_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "x.mp4"
    broken.write_bytes(os.urandom(4096))
    text = tmp_path / "notes.txt"
    text.write_text("not a video\n")
    empty = write_video(tmp_path / "empty.mp4", frames=0)
    for path in (broken, text, empty, tmp_path / "missing.mp4", tmp_path):
        with pytest.raises(SourceError) as info:
            VideoFileSource(path).start()
        assert_one_line(info.value, str(path))


# ---- CameraSource with a fake device -----------------------------------------------------


class FakeCapture:
    """Simulates cv2.VideoCapture on a camera by replaying a video file."""

    def __init__(self, video: Path | None, device: int | str, api: int) -> None:
        self.device, self.api = device, api
        self.props: dict[int, float] = {}
        self.released = False
        self._cap = cv2.VideoCapture(str(video)) if video is not None else None

    def isOpened(self) -> bool:  # noqa: N802
        return self._cap is not None and self._cap.isOpened()

    def read(self) -> tuple[bool, Any]:
        assert self._cap is not None and not self.released
        return self._cap.read()

    def set(self, prop_id: int, value: float, /) -> bool:
        self.props[prop_id] = value
        return True

    def get(self, prop_id: int, /) -> float:
        if prop_id in (cv2.CAP_PROP_FRAME_WIDTH, cv2.CAP_PROP_FRAME_HEIGHT):
            return 0.0 if self._cap is None else self._cap.get(prop_id)
        return self.props.get(prop_id, 0.0)

    def release(self) -> None:
        self.released = True
        if self._cap is not None:
            self._cap.release()


def test_camera_with_a_fake_device_replays_frames(synth_video: Path) -> None:
    made: list[FakeCapture] = []

    def factory(device: int | str, api: int) -> FakeCapture:
        made.append(FakeCapture(synth_video, device, api))
        return made[-1]

    src = CameraSource("/dev/video7", size=(640, 480), fps=30, capture_factory=factory)
    assert not made  # nothing opened before start()
    with src:
        frames = read_all_camera(src, SYNTH_FRAMES)
        assert src.size == SYNTH_SIZE  # what the "driver" granted
    (cap,) = made
    assert cap.device == 7  # OpenCV's V4L2 backend opens by index
    assert src.name == "/dev/video7"
    if os.name == "posix" and os.uname().sysname == "Linux":
        assert cap.api == cv2.CAP_V4L2
    assert cap.props[cv2.CAP_PROP_BUFFERSIZE] == 1
    assert cap.props[cv2.CAP_PROP_FOURCC] == cv2.VideoWriter.fourcc(*"MJPG")
    assert cap.props[cv2.CAP_PROP_FPS] == 30
    assert cap.released
    assert len(frames) == SYNTH_FRAMES
    assert_stamped(frames)


def read_all_camera(src: CameraSource, count: int) -> list[Frame]:
    frames = []
    for _ in range(count):
        frame = src.read(timeout_s=1.0)
        assert frame is not None
        frames.append(frame)
    with pytest.raises(SourceError, match="stopped delivering"):
        src.read()
    return frames


def test_camera_accepts_an_index() -> None:
    made: list[FakeCapture] = []

    def factory(device: int | str, api: int) -> FakeCapture:
        made.append(FakeCapture(None, device, api))
        return made[-1]

    src = CameraSource("3", capture_factory=factory)
    assert src.device == 3 and src.name == "/dev/video3"
    with pytest.raises(SourceError) as info:
        src.start()
    assert made[0].device == 3 and made[0].released
    assert_one_line(info.value, "camera /dev/video3")
    assert not src.started


def test_camera_that_does_not_open_raises_source_error() -> None:
    def factory(device: int | str, api: int) -> FakeCapture:
        return FakeCapture(None, device, api)

    with pytest.raises(SourceError) as info, CameraSource(0, capture_factory=factory):
        pass
    assert_one_line(info.value, "/dev/video0")
    assert "not found" in str(info.value) or "cannot be opened" in str(info.value)


def test_camera_device_paths_open_by_index(tmp_path: Path) -> None:
    link = tmp_path / "usb-cam-video-index0"
    link.symlink_to("/dev/video5")
    assert device_index("/dev/video2") == 2
    assert device_index(str(link)) == 5
    assert device_index(4) == 4
    assert device_index("rtsp://cam/stream") == "rtsp://cam/stream"


def test_camera_rejects_a_bad_fourcc() -> None:
    with pytest.raises(ConfigError):
        CameraSource(0, fourcc="MJPEG")


# ---- open_source -------------------------------------------------------------------------


def test_open_source_picks_the_kind(astronaut: np.ndarray, synth_video: Path) -> None:
    demo = open_source("demo", demo_image=astronaut, size=(320, 240), fps=15, frames=2)
    assert isinstance(demo, DemoSource) and demo.size == (320, 240) and demo.fps == 15
    for spec, device in (("0", 0), ("/dev/video2", "/dev/video2")):
        cam = open_source(spec)
        assert isinstance(cam, CameraSource) and cam.device == device
        assert not cam.started
    video = open_source(str(synth_video), paced=False)
    assert isinstance(video, VideoFileSource)
    with pytest.raises(SourceError):
        open_source(str(synth_video.parent / "nope.mp4"))


def test_open_source_demo_defaults_to_the_astronaut(store: Any) -> None:
    with open_source("demo", paced=False, frames=1) as src:
        frame = src.read()
    assert frame is not None and frame.image.shape == (480, 640, 3)
