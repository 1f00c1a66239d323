"""An MJPG camera's frames reach the pipeline as JPEG bytes and are decoded by
``media.jpeg``; a frame that does not decode is skipped, not fatal.

The fake V4L2 device behaves as OpenCV's V4L2 backend does: it grants a
format, and with ``CAP_PROP_CONVERT_RGB`` off hands over each MJPG frame as
one row of JPEG bytes (on, it decodes them itself). Its frames are the demo
source's real images, JPEG-encoded as a webcam would send them.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np
import pytest

from appliance.media.camera_source import CameraSource
from appliance.media.demo_source import DemoSource
from appliance.media.jpeg import decode_jpeg, is_jpeg

MJPG = int(cv2.VideoWriter.fourcc(*"MJPG"))
YUYV = int(cv2.VideoWriter.fourcc(*"YUYV"))


class MjpgCapture:
    """``cv2.VideoCapture`` on a camera that grants ``granted`` (a FOURCC code)."""

    def __init__(self, jpegs: list[bytes], granted: int) -> None:
        self.jpegs = jpegs
        self.granted = granted
        self.convert_rgb = True
        self.sets: list[tuple[int, float]] = []
        self._next = 0

    def isOpened(self) -> bool:  # noqa: N802 (OpenCV's name)
        return True

    def read(self) -> tuple[bool, Any]:
        data = self.jpegs[self._next % len(self.jpegs)]
        self._next += 1
        if self.convert_rgb or self.granted != MJPG:
            return True, cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        return True, np.frombuffer(data, np.uint8).reshape(1, -1).copy()

    def set(self, prop_id: int, value: float, /) -> bool:
        self.sets.append((prop_id, value))
        if prop_id == cv2.CAP_PROP_CONVERT_RGB:
            self.convert_rgb = bool(value)
        return True

    def get(self, prop_id: int, /) -> float:
        values = {
            cv2.CAP_PROP_FRAME_WIDTH: 320.0,
            cv2.CAP_PROP_FRAME_HEIGHT: 240.0,
            cv2.CAP_PROP_FOURCC: float(self.granted),
        }
        return values.get(prop_id, 30.0)

    def release(self) -> None:
        pass


@pytest.fixture
def jpegs(astronaut: np.ndarray) -> list[bytes]:
    with DemoSource(astronaut, size=(320, 240), paced=False, frames=4) as demo:
        return [cv2.imencode(".jpg", f.image)[1].tobytes() for f in demo]


def assert_same_picture(image: np.ndarray, data: bytes) -> None:
    """``image`` is the JPEG ``data``: OpenCV's decode of it but for the chroma, which
    ``decode_jpeg`` repeats rather than interpolates (fastupsample)."""
    expected = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    assert image.shape == expected.shape
    assert cv2.PSNR(image, expected) >= 40.0  # 44 dB here, 47-54 dB on the camera clips


def test_the_chroma_is_repeated_not_interpolated(jpegs: list[bytes]) -> None:
    """The fast upsampling is on (a quarter of a 1280x720 decode), and it is what
    differs from OpenCV's decode: not the same pixels, the same picture."""
    image = decode_jpeg(jpegs[0])
    expected = cv2.imdecode(np.frombuffer(jpegs[0], np.uint8), cv2.IMREAD_COLOR)
    assert image is not None and not np.array_equal(image, expected)
    assert_same_picture(image, jpegs[0])


def _camera(cap: MjpgCapture, fourcc: str = "MJPG") -> CameraSource:
    return CameraSource(0, size=(320, 240), fourcc=fourcc, capture_factory=lambda i, a: cap)


def test_mjpg_frames_are_read_as_jpeg_bytes_and_decoded_here(jpegs: list[bytes]) -> None:
    cap = MjpgCapture(jpegs, granted=MJPG)
    with _camera(cap) as camera:
        frames = [camera.read(1.0) for _ in range(len(jpegs))]
    assert (cv2.CAP_PROP_CONVERT_RGB, 0) in cap.sets  # the driver hands over the JPEGs
    for frame, data in zip(frames, jpegs, strict=True):
        assert frame is not None and frame.image.shape == (240, 320, 3)
        assert frame.image.flags.writeable  # the swap paints into it
        assert_same_picture(frame.image, data)
        assert frame.encoded is not None and bytes(frame.encoded) == data  # kept for a retry
        assert frame.timings_ms["decode"] > 0  # the decode, a stage of its own


def test_a_large_frame_with_restart_markers_is_decoded_in_two_halves(
    astronaut: np.ndarray,
) -> None:
    """A webcam that ends every MCU row with a restart marker (as many do): its 1280x720
    frames are decoded in two halves at once (``media.jpeg_halves``), same pixels."""
    image = cv2.resize(astronaut, (1280, 720))
    params = [cv2.IMWRITE_JPEG_RST_INTERVAL, 1280 // 16]
    data = cv2.imencode(".jpg", image, params)[1].tobytes()
    cap = MjpgCapture([data, data], granted=MJPG)
    with _camera(cap) as camera:
        frames = [camera.read(1.0), camera.read(1.0)]
        decoder = camera.decoder
    assert (decoder.halves, decoder.whole) == (2, 0)
    for frame in frames:
        assert frame is not None and np.array_equal(frame.image, decode_jpeg(data))
        assert frame.timings_ms["decode"] > 0


def test_a_camera_that_grants_another_format_keeps_its_own_conversion(
    jpegs: list[bytes],
) -> None:
    cap = MjpgCapture(jpegs, granted=YUYV)  # asked for MJPG, got YUYV
    with _camera(cap) as camera:
        frame = camera.read(1.0)
    assert not any(prop == cv2.CAP_PROP_CONVERT_RGB for prop, _ in cap.sets)
    assert frame is not None and frame.image.shape == (240, 320, 3)
    assert frame.encoded is None  # pixels, no JPEG
    assert "decode" not in frame.timings_ms


def test_a_frame_that_does_not_decode_is_skipped(
    jpegs: list[bytes], caplog: pytest.LogCaptureFixture
) -> None:
    damaged = b"\xff\xd8" + bytes(200)  # a start marker, then nothing a decoder can use
    cap = MjpgCapture([jpegs[0], damaged, jpegs[1]], granted=MJPG)
    with _camera(cap) as camera:
        first, second = camera.read(1.0), camera.read(1.0)
    assert first is not None and second is not None
    assert (first.index, second.index) == (0, 1)  # the damaged frame got no index
    assert_same_picture(second.image, jpegs[1])
    assert camera.damaged == 1
    assert "did not decode" in caplog.text


def test_a_truncated_jpeg_still_decodes_as_opencv_would(jpegs: list[bytes]) -> None:
    data = jpegs[0]
    half = decode_jpeg(data[: len(data) // 2])  # a USB hiccup cut the frame short
    assert half is not None and half.shape == (240, 320, 3)
    row = np.frombuffer(data, np.uint8).reshape(1, -1)
    assert is_jpeg(row) and not is_jpeg(np.zeros((240, 320, 3), np.uint8))
    assert decode_jpeg(b"not a jpeg") is None
