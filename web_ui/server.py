"""Serving the admin UI with waitress in a background thread of the mirror's process.

``serve(app, host, port)`` starts it and returns a ``WebServer``; ``stop()``
ends the live-preview streams, closes every connection and joins the
threads. ``port=0`` picks a free port (see ``port`` after ``start()``).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from flask import Flask
from waitress.server import create_server
from waitress.wasyncore import close_all

from appliance.errors import OutputError
from appliance.running import StartStop
from web_ui.context import web_context

logger = logging.getLogger(__name__)

JOIN_TIMEOUT_S = 5.0
DEFAULT_THREADS = 8


class WebServer(StartStop):
    """One waitress server for ``app`` on ``host:port``; a context manager."""

    def __init__(self, app: Flask, host: str, port: int, threads: int = DEFAULT_THREADS) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.threads = threads
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def start(self) -> None:
        if self._server is not None:
            return
        try:
            server = create_server(
                self.app,
                host=self.host,
                port=self.port,
                threads=self.threads,
                ident="face-mirror",
                clear_untrusted_proxy_headers=True,
            )
        except OSError as exc:
            raise OutputError(
                f"admin UI cannot listen on {self.host}:{self.port}: {exc.strerror or exc}"
            ) from exc
        self.port = int(server.effective_port)
        web_context(self.app).stopping.clear()
        self._server = server
        self._thread = threading.Thread(target=server.run, name="admin-ui", daemon=True)
        self._thread.start()
        logger.info("admin UI at %s", self.url)

    def stop(self) -> None:
        server, self._server = self._server, None
        thread, self._thread = self._thread, None
        if server is None:
            return
        web_context(self.app).stopping.set()
        # close every socket from the server's own loop thread, which then ends
        server.trigger.pull_trigger(lambda: close_all(server._map))
        if thread is not None:
            thread.join(JOIN_TIMEOUT_S)
            if thread.is_alive():
                logger.warning("admin UI thread did not stop within %s s", JOIN_TIMEOUT_S)
        server.task_dispatcher.shutdown(timeout=JOIN_TIMEOUT_S)


def serve(app: Flask, host: str, port: int, threads: int = DEFAULT_THREADS) -> WebServer:
    """Start serving ``app`` on ``host:port`` in a background thread; ``stop()`` it at exit."""
    server = WebServer(app, host, port, threads)
    server.start()
    return server
