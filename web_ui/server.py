"""Serving the admin UI in background threads of the mirror's process: HTTPS by default.

``serve(app, host, port, tls=context)`` starts it and returns a ``WebServer``;
``stop()`` ends the live-preview streams, closes every connection and joins
the threads. ``port=0`` picks a free port (see ``port`` after ``start()``).
``web_ui.front`` owns the port (connection limits, TLS with the given
``ssl.SSLContext``; plain HTTP on the same port is only redirected to HTTPS)
and hands each connection to waitress (``web_ui.waitress_server``: slow
requests closed). Without ``tls`` it serves plain HTTP (tests, or behind a
venue's HTTPS proxy). While it serves, the app can close one client's
connection (``WebContext.close_connection``: a stalled live preview). The
server keeps at most ``OUTBUF_HIGH_BYTES`` of a response waiting for a slow
client before the writing thread waits, so a client that stops reading is
noticed soon. A request body over ``MAX_BODY_BYTES`` is refused (413) from
its ``Content-Length`` before it is read (a chunked one once it is that long),
so nothing big is spooled. Socket errors of clients that go away are not
logged as tracebacks.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from typing import Any

from flask import Flask
from waitress.wasyncore import close_all

from appliance.errors import OutputError
from appliance.running import Lifecycle
from web_ui.context import web_context
from web_ui.front import Front
from web_ui.waitress_server import GuardedServer, create_guarded_server

logger = logging.getLogger(__name__)

JOIN_TIMEOUT_S = 5.0
DEFAULT_THREADS = 8
OUTBUF_HIGH_BYTES = 1 << 20  # waitress's default is 16 MiB per connection
HEADER_BYTES = 64 * 1024  # waitress's default is 256 KiB


class WebServer(Lifecycle):
    """The admin UI on ``host:port`` (HTTPS with ``tls``); a context manager (restartable)."""

    stop_timeout_s = JOIN_TIMEOUT_S

    def __init__(
        self,
        app: Flask,
        host: str,
        port: int,
        threads: int = DEFAULT_THREADS,
        *,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__()
        self.app = app
        self.host = host
        self.port = port
        self.threads = threads
        self.tls = tls
        self._server: GuardedServer | None = None
        self._front: Front | None = None
        self._thread: threading.Thread | None = None
        # stopped, not joined
        self._ending: tuple[GuardedServer, Front, threading.Thread | None] | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/"

    def _on_start(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        try:
            listener = socket.create_server((self.host, self.port), family=family)
        except OSError as exc:
            raise OutputError(
                f"admin UI cannot listen on {self.host}:{self.port}: {exc.strerror or exc}"
            ) from exc
        self.port = int(listener.getsockname()[1])
        server = create_guarded_server(
            self.app,
            threads=self.threads,
            ident="face-mirror",
            clear_untrusted_proxy_headers=True,
            outbuf_high_watermark=OUTBUF_HIGH_BYTES,
            max_request_body_size=max_body_bytes(self.app),
            max_request_header_size=HEADER_BYTES,
            log_socket_errors=False,
        )
        ctx = web_context(self.app)
        ctx.stopping.clear()
        ctx.close_connection = self.close_connection
        ctx.https_only = self.tls is not None
        front = Front(listener, server, self.tls)
        self._server, self._front = server, front
        self._thread = threading.Thread(target=server.run, name="admin-ui", daemon=True)
        self._thread.start()
        front.start()
        logger.info("admin UI at %s", self.url)

    def _on_stop(self) -> None:
        server, self._server = self._server, None
        front, self._front = self._front, None
        thread, self._thread = self._thread, None
        if server is None or front is None:
            return
        ctx = web_context(self.app)
        ctx.stopping.set()
        ctx.close_connection = None
        front.stop()
        # close every socket from the server's own loop thread, which then ends
        server.trigger.pull_trigger(lambda: close_all(server._map))
        self._ending = (server, front, thread)

    def _join(self, timeout_s: float) -> bool:
        """Wait for the front, the loop thread and the request threads (each ``timeout_s``)."""
        if self._ending is None:
            return True
        server, front, thread = self._ending
        joined = front.join(timeout_s)
        if not joined:
            logger.warning("admin UI front did not stop within %s s", timeout_s)
        if thread is not None:
            thread.join(timeout_s)
            if thread.is_alive():
                logger.warning("admin UI thread did not stop within %s s", timeout_s)
                joined = False
        server.task_dispatcher.shutdown(timeout=timeout_s)  # warns of threads still running
        if server.task_dispatcher.threads:
            joined = False
        if joined:
            self._ending = None
        return joined

    def close_connection(self, host: str, port: int) -> None:
        """Close the connection from ``host:port`` (waitress's end and the TLS one), if open."""
        server, front = self._server, self._front
        if server is not None:
            server.trigger.pull_trigger(lambda: _close_channel(server, host, port))
        if front is not None:
            front.abort(host, port)


def max_body_bytes(app: Flask) -> int:
    """The largest request body the app takes (its ``MAX_CONTENT_LENGTH``)."""
    limit = app.config.get("MAX_CONTENT_LENGTH")
    return int(limit) if limit else 1 << 20


def _close_channel(server: Any, host: str, port: int) -> None:
    for channel in list(server.active_channels.values()):
        if tuple(channel.addr[:2]) == (host, port):
            logger.info("closing the connection from %s port %s", host, port)
            channel.handle_close()
            return


def serve(
    app: Flask,
    host: str,
    port: int,
    threads: int = DEFAULT_THREADS,
    *,
    tls: ssl.SSLContext | None = None,
) -> WebServer:
    """Start serving ``app`` on ``host:port`` in background threads; ``stop()`` it at exit."""
    server = WebServer(app, host, port, threads, tls=tls)
    server.start()
    return server
