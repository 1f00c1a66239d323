"""Frame sinks: NullSink, VideoFileSink and the HTTP PreviewServer (real sockets)."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.client import HTTPResponse
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from appliance.errors import OutputError
from appliance.media.frames import Frame
from appliance.media.latest_jpeg import LatestJpeg
from appliance.media.null_sink import NullSink
from appliance.media.preview_server import PreviewServer
from appliance.media.video_sink import VideoFileSink

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy


def make_frame(i: int, size: tuple[int, int] = (160, 120)) -> Frame:
    w, h = size
    img = np.full((h, w, 3), (i * 7) % 256, np.uint8)
    cv2.circle(img, (w // 2, h // 2), min(w, h) // 4, (0, 0, 255), -1)
    return Frame(image=img, index=i, capture_ns=time.monotonic_ns())


def count_frames(path: Path) -> tuple[int, tuple[int, int]]:
    cap = cv2.VideoCapture(str(path))
    assert cap.isOpened()
    count, size = 0, (0, 0)
    while True:
        ok, img = cap.read()
        if not ok:
            break
        count, size = count + 1, (img.shape[1], img.shape[0])
    cap.release()
    return count, size


def get(url: str, timeout: float = 5.0) -> HTTPResponse:
    response: HTTPResponse = OPENER.open(url, timeout=timeout)
    return response


# ---- NullSink ----------------------------------------------------------------------------


def test_null_sink_counts_and_checks_state() -> None:
    sink = NullSink()
    with pytest.raises(RuntimeError, match="start"):
        sink.write(make_frame(0))
    with sink:
        for i in range(5):
            sink.write(make_frame(i))
    assert sink.frames_written == 5 and sink.last_index == 4
    with pytest.raises(RuntimeError, match="closed"):
        sink.write(make_frame(5))


# ---- VideoFileSink -----------------------------------------------------------------------


def test_video_sink_writes_a_readable_mp4(tmp_path: Path) -> None:
    path = tmp_path / "out" / "nested" / "clip.mp4"
    with VideoFileSink(path, fps=25.0) as sink:
        for i in range(15):
            sink.write(make_frame(i))
    assert sink.size == (160, 120)
    assert count_frames(path) == (15, (160, 120))


def test_video_sink_resizes_frames_to_the_set_size(tmp_path: Path) -> None:
    path = tmp_path / "sized.mp4"
    with VideoFileSink(path, fps=10.0, size=(128, 96)) as sink:
        sink.write(make_frame(0, (160, 120)))
        sink.write(make_frame(1, (128, 96)))
        sink.write(make_frame(2, (320, 240)))
    assert count_frames(path) == (3, (128, 96))


def test_video_sink_unwritable_path_fails_at_start(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    for path in (blocker / "sub" / "out.mp4", tmp_path):
        sink = VideoFileSink(path, fps=25.0)
        with pytest.raises(OutputError) as info:
            sink.start()
        assert str(path) in str(info.value) and "\n" not in str(info.value)
        assert not sink.started


def test_video_sink_writer_that_cannot_open_raises(tmp_path: Path) -> None:
    path = tmp_path / "clip.unknown_container_ext"
    with pytest.raises(OutputError, match="video writer"), VideoFileSink(path, 25.0, (64, 48)):
        pass


# ---- PreviewServer -----------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[PreviewServer]:
    with PreviewServer(port=0) as srv:
        yield srv


def read_parts(response: HTTPResponse, count: int) -> list[bytes]:
    """The first ``count`` JPEG parts of a multipart/x-mixed-replace response."""
    parts: list[bytes] = []
    while len(parts) < count:
        line = response.readline()
        assert line, "stream ended early"
        if line.strip() != b"--frame":
            continue
        length = 0
        while (header := response.readline().strip()) != b"":
            name, _, value = header.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        parts.append(response.read(length))
    return parts


class Feeder:
    """Writes frames to a sink from a thread until stopped."""

    def __init__(self, sink: PreviewServer, size: tuple[int, int] = (160, 120)) -> None:
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(sink, size), daemon=True)
        self.thread.start()

    def _run(self, sink: PreviewServer, size: tuple[int, int]) -> None:
        i = 0
        while not self.stop.wait(0.02):
            sink.write(make_frame(i, size))
            i += 1

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2.0)


def test_preview_frame_jpg(server: PreviewServer) -> None:
    with pytest.raises(urllib.error.HTTPError) as info:
        get(server.url + "frame.jpg")
    assert info.value.code == 503
    server.write(make_frame(0, (320, 240)))
    with get(server.url + "frame.jpg") as response:
        assert response.headers["Content-Type"] == "image/jpeg"
        data = response.read()
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None and image.shape == (240, 320, 3)


def test_preview_page_is_html(server: PreviewServer) -> None:
    assert server.url.startswith("http://127.0.0.1:") and server.port > 0
    with get(server.url) as response:
        assert response.headers["Content-Type"].startswith("text/html")
        assert b"/stream.mjpg" in response.read()
    with pytest.raises(urllib.error.HTTPError) as info:
        get(server.url + "nothing-here")
    assert info.value.code == 404


def test_preview_stream_delivers_jpeg_parts(server: PreviewServer) -> None:
    feeder = Feeder(server)
    try:
        with get(server.url + "stream.mjpg") as response:
            assert response.headers["Content-Type"].startswith("multipart/x-mixed-replace")
            parts = read_parts(response, 3)
    finally:
        feeder.close()
    for part in parts:
        image = cv2.imdecode(np.frombuffer(part, np.uint8), cv2.IMREAD_COLOR)
        assert image is not None and image.shape == (120, 160, 3)


def test_preview_encodes_once_per_frame_for_many_clients(
    server: PreviewServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    encodes = []
    original = LatestJpeg._encode

    def counting(self: LatestJpeg, image: Any) -> bytes:
        encodes.append(1)
        return original(self, image)

    monkeypatch.setattr(LatestJpeg, "_encode", counting)
    clients = [get(server.url + "stream.mjpg") for _ in range(3)]
    feeder = Feeder(server)
    try:
        for response in clients:
            read_parts(response, 3)
    finally:
        feeder.close()
        for response in clients:
            response.close()
    assert len(encodes) <= server.frames_written


def test_preview_slow_client_never_blocks_write(server: PreviewServer) -> None:
    stalled = get(server.url + "stream.mjpg")  # connected, never reads
    try:
        began = time.monotonic()
        for i in range(200):
            server.write(make_frame(i, (640, 480)))
        assert time.monotonic() - began < 1.0
    finally:
        stalled.close()


def test_preview_cleans_up_disconnected_clients(server: PreviewServer) -> None:
    feeder = Feeder(server)
    try:
        response = get(server.url + "stream.mjpg")
        read_parts(response, 1)
        assert server.clients == 1
        response.close()
        deadline = time.monotonic() + 3.0
        while server.clients and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.clients == 0
    finally:
        feeder.close()


def test_preview_stop_is_fast_with_a_client_connected() -> None:
    srv = PreviewServer()
    srv.start()
    srv.write(make_frame(0))
    response = get(srv.url + "stream.mjpg")
    read_parts(response, 1)
    began = time.monotonic()
    srv.close()
    assert time.monotonic() - began < 1.0
    response.close()
    with pytest.raises(urllib.error.URLError):
        get(srv.url, timeout=1.0)


def test_preview_port_in_use_raises_output_error(server: PreviewServer) -> None:
    second = PreviewServer(port=server.port)
    with pytest.raises(OutputError, match=str(server.port)):
        second.start()
    assert not second.started


def _leave(port: int, path: str, read: bool, reset: bool) -> None:
    """A client that asks for ``path`` and goes away (reading a little first, or not)."""
    import socket
    import struct

    conn = socket.create_connection(("127.0.0.1", port), timeout=5.0)
    conn.sendall(f"GET {path} HTTP/1.1\r\nHost: preview\r\n\r\n".encode("ascii"))
    if read:
        conn.recv(100)
    if reset:  # close with RST, as a killed browser tab does
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def test_preview_clients_that_leave_mid_stream_print_no_traceback(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with PreviewServer(port=0) as srv:
        feeder = Feeder(srv, (640, 480))
        try:
            time.sleep(0.1)
            for path in ("/stream.mjpg", "/frame.jpg", "/"):
                for read in (True, False):
                    for reset in (True, False):
                        _leave(srv.port, path, read, reset)
                        time.sleep(0.15)  # the server writes into the closed connection
            response = get(srv.url + "stream.mjpg")  # still serving
            assert len(read_parts(response, 2)) == 2
            response.close()
        finally:
            feeder.close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Error" not in err, err


# ---- VideoFileSink: the target is replaced only by a finished, checked file ---------------


def test_video_sink_leaves_the_old_file_until_the_new_one_is_finished(tmp_path: Path) -> None:
    out = tmp_path / "out.mp4"
    out.write_bytes(b"old recording")
    with VideoFileSink(out, 25.0) as sink:
        for i in range(10):
            sink.write(make_frame(i))
        assert out.read_bytes() == b"old recording"  # still writing: beside it, not into it
        assert len(list(tmp_path.iterdir())) == 2
    assert count_frames(out) == (10, (160, 120))
    assert [p.name for p in tmp_path.iterdir()] == ["out.mp4"]


def test_video_sink_discard_keeps_the_old_file(tmp_path: Path) -> None:
    out = tmp_path / "out.mp4"
    out.write_bytes(b"old recording")
    with VideoFileSink(out, 25.0) as sink:
        for i in range(5):
            sink.write(make_frame(i))
        sink.discard()
    assert out.read_bytes() == b"old recording"
    assert [p.name for p in tmp_path.iterdir()] == ["out.mp4"]


def test_video_sink_on_a_full_disk_raises_and_keeps_the_old_file(tmp_path: Path) -> None:
    import subprocess

    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs (root needed): {mounted.stderr.strip()}")
    try:
        out = disk / "out.mp4"
        out.write_bytes(b"old recording" * 1000)
        rng = np.random.default_rng(0)
        sink = VideoFileSink(out, 25.0, (320, 240))
        sink.start()
        for i in range(30):  # noise compresses badly: far more than the 187 kB left
            image = rng.integers(0, 256, (240, 320, 3), np.uint8)
            sink.write(Frame(image=image, index=i, capture_ns=0))
        with pytest.raises(OutputError, match="is the disk full"):
            sink.stop()
        assert out.read_bytes() == b"old recording" * 1000
        assert [p.name for p in disk.iterdir()] == ["out.mp4"]
    finally:
        subprocess.run(["umount", str(disk)], check=False)
