"""Serving the admin UI with waitress in a background thread of the mirror's process.

``serve(app, host, port)`` starts it and returns a ``WebServer``; ``stop()``
ends the live-preview streams, closes every connection and joins the
threads. ``port=0`` picks a free port (see ``port`` after ``start()``).
While it serves, the app can close one client's connection
(``WebContext.close_connection``: a stalled live preview). The server keeps
at most ``OUTBUF_HIGH_BYTES`` of a response waiting for a slow client before
the writing thread waits, so a client that stops reading is noticed soon.
Socket errors of clients that go away are not logged as tracebacks.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from flask import Flask
from waitress.server import create_server
from waitress.wasyncore import close_all

from appliance.errors import OutputError
from appliance.running import Lifecycle
from web_ui.context import web_context

logger = logging.getLogger(__name__)

JOIN_TIMEOUT_S = 5.0
DEFAULT_THREADS = 8
OUTBUF_HIGH_BYTES = 1 << 20  # waitress's default is 16 MiB per connection


class WebServer(Lifecycle):
    """One waitress server for ``app`` on ``host:port``; a context manager (restartable)."""

    stop_timeout_s = JOIN_TIMEOUT_S

    def __init__(self, app: Flask, host: str, port: int, threads: int = DEFAULT_THREADS) -> None:
        super().__init__()
        self.app = app
        self.host = host
        self.port = port
        self.threads = threads
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._ending: tuple[Any, threading.Thread | None] | None = None  # stopped, not joined

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def _on_start(self) -> None:
        try:
            server = create_server(
                self.app,
                host=self.host,
                port=self.port,
                threads=self.threads,
                ident="face-mirror",
                clear_untrusted_proxy_headers=True,
                outbuf_high_watermark=OUTBUF_HIGH_BYTES,
                log_socket_errors=False,
            )
        except OSError as exc:
            raise OutputError(
                f"admin UI cannot listen on {self.host}:{self.port}: {exc.strerror or exc}"
            ) from exc
        self.port = int(server.effective_port)
        ctx = web_context(self.app)
        ctx.stopping.clear()
        ctx.close_connection = self.close_connection
        self._server = server
        self._thread = threading.Thread(target=server.run, name="admin-ui", daemon=True)
        self._thread.start()
        logger.info("admin UI at %s", self.url)

    def _on_stop(self) -> None:
        server, self._server = self._server, None
        thread, self._thread = self._thread, None
        if server is None:
            return
        ctx = web_context(self.app)
        ctx.stopping.set()
        ctx.close_connection = None
        # close every socket from the server's own loop thread, which then ends
        server.trigger.pull_trigger(lambda: close_all(server._map))
        self._ending = (server, thread)

    def _join(self, timeout_s: float) -> bool:
        """Wait for the loop thread and the request threads (each up to ``timeout_s``)."""
        if self._ending is None:
            return True
        server, thread = self._ending
        joined = True
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
        """Close the connection from ``host:port`` (from the server's loop thread), if open."""
        server = self._server
        if server is not None:
            server.trigger.pull_trigger(lambda: _close_channel(server, host, port))


def _close_channel(server: Any, host: str, port: int) -> None:
    for channel in list(server.active_channels.values()):
        if tuple(channel.addr[:2]) == (host, port):
            logger.info("closing the connection from %s port %s", host, port)
            channel.handle_close()
            return


def serve(app: Flask, host: str, port: int, threads: int = DEFAULT_THREADS) -> WebServer:
    """Start serving ``app`` on ``host:port`` in a background thread; ``stop()`` it at exit."""
    server = WebServer(app, host, port, threads)
    server.start()
    return server
