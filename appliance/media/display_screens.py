"""What the HDMI screen shows besides the mirror: the first-boot notice, the camera-lost screen.

``FirstBootScreen`` wraps the display sink: while provisioning's one-time
password notice (``web/first-boot.txt``) exists, the screen shows where the
admin page is, the password and the SHA-256 fingerprint of the page's
certificate (``web/tls-cert.pem``, made at the first start: staff check the
browser shows the same) instead of the mirror; the first password
change deletes the notice and the mirror appears. The notice is read once,
and again only when it or the certificate changes (modification time, size or presence):
not on every frame. A frame the pipeline marked ``idle`` (nobody in view: its
idle mode or the PIR sensor's) shows the idle screen instead, and the mirror
comes back with the first frame that has a face. The overlays' staff note
(the accelerator not in use) and the A/B update's line are written small on the other
frames (the update's also on the first-boot and idle screens), on a copy:
the preview and the recording get the frame as it was. ``CameraLostScreen``
shows its screen through a ``ScreenFeed`` while the camera is gone (the
pipeline writes nothing then) and hides it as soon as frames come again.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import socket
from pathlib import Path

from appliance.device.certificate import CERT_NAME, read_fingerprint
from appliance.media.frames import Frame
from appliance.media.overlays import FirstBootInfo, Overlays
from appliance.media.screen_feed import ScreenFeed
from appliance.media.sink_base import FrameSink

logger = logging.getLogger(__name__)

_PASSWORD = re.compile(r"^password:\s*(\S+)\s*$", re.MULTILINE)


def device_ip() -> str:
    """This device's LAN address (no packet is sent: a UDP socket is only pointed outwards)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))
            return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def one_time_password(notice: Path) -> str | None:
    """The password in provisioning's first-boot notice, or None without a notice."""
    try:
        text = notice.read_text(encoding="utf-8")
    except OSError:
        return None
    match = _PASSWORD.search(text)
    return match.group(1) if match else None


class FirstBootScreen(FrameSink):
    """The display sink, showing the first-boot notice until the first admin login, and the
    idle screen while nobody is in view."""

    def __init__(
        self, inner: FrameSink, overlays: Overlays, notice: Path, port: int, https: bool = True
    ) -> None:
        super().__init__()
        self.inner = inner
        self.overlays = overlays
        self.notice = notice
        self.port = port
        self.scheme = "https" if https else "http"
        self._seen: tuple[int, ...] | None = None  # the notice's and certificate's stat last read
        self._info: FirstBootInfo | None = None  # what the screen shows; None: no notice
        self.reads = 0  # times the notice was read

    def __repr__(self) -> str:
        return f"FirstBootScreen({self.inner!r})"

    @property
    def problem(self) -> str:
        return self.inner.problem

    def _on_start(self) -> None:
        self.inner.start()

    def _on_stop(self) -> None:
        self.inner.stop()

    def _on_close(self) -> None:
        self.inner.close()

    def _first_boot(self) -> FirstBootInfo | None:
        """The notice's screen text; the file is read again only when it changed."""
        try:
            stat = self.notice.stat()
            seen: tuple[int, ...] | None = (stat.st_mtime_ns, stat.st_size, *self._cert_stat())
        except OSError:
            seen = None
        if seen is None:
            self._seen = self._info = None
            return None
        if seen != self._seen:
            self._seen = seen
            self.reads += 1
            password = one_time_password(self.notice)
            ip = device_ip()
            url = f"{self.scheme}://{ip}:{self.port}/"
            fingerprint = read_fingerprint(self.notice.parent) if self.scheme == "https" else None
            self._info = (
                None if password is None else FirstBootInfo(ip, url, password, fingerprint or "")
            )
        return self._info

    def _cert_stat(self) -> tuple[int, ...]:
        try:
            stat = (self.notice.parent / CERT_NAME).stat()
        except OSError:
            return ()
        return (stat.st_mtime_ns, stat.st_size)

    def _write(self, frame: Frame) -> None:
        info = self._first_boot()
        if info is not None:
            size = (frame.image.shape[1], frame.image.shape[0])
            screen = self.overlays.first_boot_screen(size, info)
            self.overlays.draw_update_note(screen)
            frame = Frame(image=screen, index=frame.index, capture_ns=frame.capture_ns)
        elif frame.idle and not frame.faces:
            size = (frame.image.shape[1], frame.image.shape[0])
            screen = self.overlays.idle_screen(size).copy()
            self.overlays.draw_staff_note(screen)
            self.overlays.draw_update_note(screen)
            frame = Frame(image=screen, index=frame.index, capture_ns=frame.capture_ns)
        elif self.overlays.staff_note or self.overlays.update_note:
            noted = frame.image.copy()  # the frame is the other outputs' too
            self.overlays.draw_staff_note(noted)
            self.overlays.draw_update_note(noted)
            frame = dataclasses.replace(frame, image=noted)
        self.inner.write(frame)


class CameraLostScreen:
    """Shows the camera-lost screen on ``sinks`` while the camera is gone.

    ``update`` is the capture side's "camera lost/back" event (``PipelineRunner``'s
    ``on_camera``): hiding returns once the screen's feed has stopped, before the
    camera's first frame flows on.
    """

    def __init__(self, sinks: list[FrameSink], overlays: Overlays, size: tuple[int, int]) -> None:
        self.feed = ScreenFeed(sinks)
        self.overlays = overlays
        self.size = size
        self._closed = False

    def update(self, camera_connected: bool) -> None:
        if self._closed:  # a last event from a capture thread that is stopping
            return
        if not camera_connected and not self.feed.showing:
            logger.info("camera lost: showing the camera screen")
            self.feed.show(self.overlays.camera_lost_screen(self.size))
        elif camera_connected and self.feed.showing:
            self.feed.hide()

    def close(self) -> None:
        self._closed = True
        self.feed.hide()
