"""A live preview over HTTP: the latest frame as an MJPEG stream and as a JPEG.

``/`` is a tiny page showing ``/stream.mjpg`` (multipart/x-mixed-replace);
``/frame.jpg`` is the latest frame alone (503 until there is one). The
server runs the standard library's ``ThreadingHTTPServer`` in a daemon
thread; ``write()`` never waits for a client (see ``LatestJpeg``). Given the
``hub`` of the admin preview's sink (``WebPreviewSink``), it serves that one
feed: each frame is encoded once for both previews, and this sink's own
``write()`` does nothing (the feed's sink publishes). A client
that leaves (closes the tab, resets the connection, stops reading) is logged
at debug level, never printed as a traceback.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from appliance.errors import ConfigError, OutputError
from appliance.media.frames import Frame
from appliance.media.latest_jpeg import LatestJpeg
from appliance.media.sink_base import FrameSink

logger = logging.getLogger(__name__)

BOUNDARY = "frame"
WAIT_S = 0.25  # how often a streaming client re-checks for shutdown
SEND_TIMEOUT_S = 5.0  # a client that accepts no data for this long is dropped
JOIN_TIMEOUT_S = 1.0

PAGE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Mirror preview</title>
<style>body{margin:0;background:#111;display:flex;justify-content:center;align-items:center;
height:100vh}img{max-width:100%;max-height:100%}</style></head>
<body><img src="/stream.mjpg" alt="live preview"></body></html>
"""


def _part_header(length: int) -> bytes:
    return (f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {length}\r\n\r\n").encode(
        "ascii"
    )


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], hub: LatestJpeg) -> None:
        self.hub = hub
        self.stopping = threading.Event()  # a shared hub is not closed when this server stops
        self.clients: set[socket.socket] = set()
        self.clients_lock = threading.Lock()
        super().__init__(address, _Handler)

    def handle_error(self, request: object, client_address: Any) -> None:
        """A client that left is normal (debug log); anything else is logged with its trace."""
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):  # BrokenPipe, ConnectionReset, timeout
            logger.debug("preview client %s left: %s", client_address, exc)
        else:
            logger.error("preview request from %s failed", client_address, exc_info=exc)

    def drop_clients(self) -> None:
        """Shut every streaming connection so its handler thread ends at once."""
        with self.clients_lock:
            clients = list(self.clients)
        for conn in clients:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    timeout = SEND_TIMEOUT_S

    @property
    def preview(self) -> _Server:
        return cast(_Server, self.server)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in ("/", "/index.html"):
            self._send_bytes(HTTPStatus.OK, "text/html; charset=utf-8", PAGE)
        elif path == "/frame.jpg":
            self._send_frame()
        elif path == "/stream.mjpg":
            self._stream()
        else:
            self.send_error(HTTPStatus.NOT_FOUND)

    def _send_bytes(self, status: HTTPStatus, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _send_frame(self) -> None:
        latest = self.preview.hub.jpeg()
        if latest is None:
            self.send_response(HTTPStatus.SERVICE_UNAVAILABLE)
            self.send_header("Retry-After", "1")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._send_bytes(HTTPStatus.OK, "image/jpeg", latest[1])

    def _stream(self) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", f"multipart/x-mixed-replace; boundary={BOUNDARY}")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        with self.preview.clients_lock:
            self.preview.clients.add(self.connection)
        try:
            self._stream_parts()
        except OSError as exc:  # BrokenPipe, ConnectionReset, timeout, shut down by stop()
            logger.debug("preview client %s left: %s", self.address_string(), exc)
        finally:
            with self.preview.clients_lock:
                self.preview.clients.discard(self.connection)

    def _stream_parts(self) -> None:
        hub, sent = self.preview.hub, 0
        while True:
            seq = hub.wait_newer(sent, WAIT_S)
            if seq is None or self.preview.stopping.is_set():
                return
            latest = hub.jpeg() if seq > sent else None
            if latest is None:
                continue
            sent, data = latest
            self.wfile.write(_part_header(len(data)) + data + b"\r\n")
            self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("preview %s: %s", self.address_string(), format % args)


class PreviewServer(FrameSink):
    """Serves the latest written frame at ``url`` (``/``, ``/stream.mjpg``, ``/frame.jpg``).

    ``port=0`` picks a free port (see ``port`` / ``url`` after ``start()``);
    a port in use raises ``OutputError``. ``write()`` only swaps a reference:
    the frame's image must not be modified after it is written. ``hub``: a
    feed another sink publishes into (then ``jpeg_quality`` is the feed's).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        jpeg_quality: int = 80,
        hub: LatestJpeg | None = None,
    ) -> None:
        super().__init__()
        if not 1 <= jpeg_quality <= 100:
            raise ConfigError(f"JPEG quality must be 1..100, got {jpeg_quality}")
        if not 0 <= port <= 65535:
            raise ConfigError(f"port must be 0..65535, got {port}")
        self.host = host
        self.port = port
        self._shared = hub is not None
        self._hub = hub if hub is not None else LatestJpeg(jpeg_quality)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"PreviewServer({self.url!r})"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    @property
    def clients(self) -> int:
        """The number of connected MJPEG stream clients."""
        server = self._server
        if server is None:
            return 0
        with server.clients_lock:
            return len(server.clients)

    def _on_start(self) -> None:
        try:
            server = _Server((self.host, self.port), self._hub)
        except OSError as exc:
            raise OutputError(
                f"preview server cannot listen on {self.host}:{self.port}: {exc.strerror or exc}"
            ) from exc
        self.port = int(server.server_address[1])
        if not self._shared:
            self._hub.reopen()
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="preview-http"
        )
        self._thread.daemon = True
        self._thread.start()
        logger.info("preview at %s", self.url)

    def _write(self, frame: Frame) -> None:
        if not self._shared:  # a shared feed is published by its own sink
            self._hub.publish(frame.image)

    def _on_stop(self) -> None:
        server, self._server = self._server, None
        thread, self._thread = self._thread, None
        if not self._shared:
            self._hub.close()
        if server is None:
            return
        server.stopping.set()
        server.drop_clients()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(JOIN_TIMEOUT_S)
            if thread.is_alive():
                logger.warning("preview server thread did not stop within %s s", JOIN_TIMEOUT_S)
