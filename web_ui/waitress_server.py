"""waitress as the admin page's HTTP engine, fed connections by ``web_ui.front``.

waitress parses requests, runs the app in its threads and keeps a slow client's
response from piling up; it never listens itself (it cannot serve TLS): the
front ``adopt``s each connection as if waitress had accepted it, with the
client's address and port. On top of waitress's own limits (``Adjustments``:
the request body's size checked against ``Content-Length`` before the body is
read, and counted for chunked bodies; idle connections closed after
``channel_timeout``) a request still being read must come in at
``MIN_RATE_BPS`` on average after ``GRACE_S``: a client that sends half a
request and a byte now and then (slowloris) loses its connection after
``GRACE_S``, whereas waitress alone keeps it for as long as the bytes trickle.
"""

from __future__ import annotations

import copy
import logging
import socket
import time
from typing import Any

from waitress.channel import HTTPChannel
from waitress.server import TcpWSGIServer

logger = logging.getLogger(__name__)

GRACE_S = 10.0  # a request's headers (and its body's start) get this long in any case
MIN_RATE_BPS = 2048  # then it must average this many bytes a second (an upload on poor Wi-Fi)
IDLE_S = 30  # an idle keep-alive connection is closed after this long (waitress: 120 s)
CHECK_EVERY_S = 1  # waitress's cleanup_interval: how often connections are checked


class GuardedChannel(HTTPChannel):  # type: ignore[misc]
    """waitress's channel, noting when the request it is reading began."""

    reading_since: float | None = None  # monotonic seconds; None: no request half read

    def received(self, data: bytes) -> bool:
        if self.request is None and data:
            self.reading_since = time.monotonic()
        result = bool(super().received(data))
        if self.request is None:
            self.reading_since = None
        return result

    def too_slow(self, now: float) -> bool:
        """Whether the request being read has fallen below the minimum rate."""
        request, since = self.request, self.reading_since
        if request is None or since is None:
            return False
        got = int(request.header_bytes_received) + int(request.body_bytes_received)
        return now - since > GRACE_S + got / MIN_RATE_BPS


class GuardedServer(TcpWSGIServer):  # type: ignore[misc]
    """A waitress server that never listens: ``adopt`` hands it connections."""

    channel_class = GuardedChannel

    def maintenance(self, now: float) -> None:
        super().maintenance(now)  # idle connections (channel_timeout)
        mono = time.monotonic()
        for channel in list(self.active_channels.values()):
            if not channel.will_close and channel.too_slow(mono):
                logger.info(
                    "closing the connection from %s port %s: its request came too slowly",
                    channel.addr[0],
                    channel.addr[1],
                )
                channel.will_close = True

    def adopt(self, sock: socket.socket, addr: tuple[Any, ...], scheme: str) -> None:
        """Serve ``sock`` (from the client at ``addr``, over ``scheme``); any thread."""
        adj = self.adj
        if scheme != adj.url_scheme:
            adj = copy.copy(adj)
            adj.url_scheme = scheme
        self.trigger.pull_trigger(lambda: self._adopt(sock, addr, adj))

    def _adopt(self, sock: socket.socket, addr: tuple[Any, ...], adj: Any) -> None:
        if sock.family != socket.AF_UNIX:
            self.set_socket_options(sock)
        self.channel_class(self, sock, addr, adj, map=self._map)

    def open_from(self) -> list[str]:
        """The client address of every open connection (any thread)."""
        return [str(channel.addr[0]) for channel in list(self.active_channels.values())]


def create_guarded_server(app: Any, **options: Any) -> GuardedServer:
    """The waitress server over ``app`` with ``options`` (waitress ``Adjustments``)."""
    unbound = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    return GuardedServer(
        app,
        _start=False,
        _sock=unbound,
        bind_socket=False,
        channel_timeout=IDLE_S,
        cleanup_interval=CHECK_EVERY_S,
        asyncore_use_poll=True,  # not select(): descriptors above 1023 work
        **options,
    )
