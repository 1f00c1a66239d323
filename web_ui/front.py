"""The admin page's port: accepts connections, limits them, speaks TLS, hands them to waitress.

waitress cannot serve TLS, so this front owns the listening socket, in an
asyncio loop of its own thread (Python's ``ssl``: TLS 1.2 and newer):

- at most ``MAX_OPEN`` connections are open, at most ``MAX_PER_CLIENT`` from one
  address; a connection over either is closed at once, so one host cannot take
  every connection;
- with a TLS context, a connection whose first byte opens a TLS handshake is
  decrypted here (the handshake must end within ``HANDSHAKE_S``) and its plain
  bytes pass to waitress through a socket pair; any other first byte is plain
  HTTP, handed over as it is (the app only redirects it to HTTPS). A client that
  sends nothing within ``HANDSHAKE_S`` is closed;
- without one, each connection is handed over as it is.

waitress gets each connection with the client's own address and port (the
login limits and ``close_connection`` work as before), and ``https`` as the
URL scheme for decrypted ones. ``abort`` closes a decrypted connection from
the front's side too (a client that stopped reading).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import socket
import ssl
import threading
import time
from typing import Any, Protocol

logger = logging.getLogger(__name__)

MAX_OPEN = 256  # each TLS connection takes three descriptors (the pair's two ends)
MAX_PER_CLIENT = 32  # a browser opens 6 per site; a few phones behind one address
HANDSHAKE_S = 10.0
BACKLOG = 128
CHUNK = 65536
TLS_RECORD = 0x16  # the first byte of a TLS handshake record
REFUSAL_LOG_EVERY_S = 60.0


class Backend(Protocol):
    def adopt(self, sock: socket.socket, addr: tuple[Any, ...], scheme: str) -> None: ...

    def open_from(self) -> list[str]: ...


class Front:
    """Listens on ``listener``; ``start`` and ``stop`` its thread."""

    def __init__(
        self, listener: socket.socket, backend: Backend, tls: ssl.SSLContext | None
    ) -> None:
        self.listener = listener
        self.backend = backend
        self.tls = tls
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(_quiet_errors)
        self._thread = threading.Thread(target=self._run, name="admin-ui-front", daemon=True)
        self._stopping: asyncio.Event | None = None
        self._pending: collections.Counter[str] = collections.Counter()  # not handed over yet
        self._piped: dict[tuple[str, int], asyncio.Transport] = {}  # decrypted, by client
        self._tasks: set[asyncio.Future[None]] = set()
        self._refused = 0
        self._refusal_logged = -REFUSAL_LOG_EVERY_S

    def start(self) -> None:
        self.listener.setblocking(False)
        self.listener.listen(BACKLOG)
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and close every connection not yet handed to waitress."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop_soon)

    def join(self, timeout_s: float) -> bool:
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def abort(self, host: str, port: int) -> None:
        """Close the decrypted connection from ``host:port`` (any thread), if open."""
        with contextlib.suppress(RuntimeError):  # the loop has ended
            self._loop.call_soon_threadsafe(self._abort, host, port)

    def _abort(self, host: str, port: int) -> None:
        transport = self._piped.get((host, port))
        if transport is not None:
            _abort(transport)

    def _stop_soon(self) -> None:
        if self._stopping is not None:
            self._stopping.set()

    def _run(self) -> None:
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self.listener.close()
            self._loop.close()

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        accepting = asyncio.ensure_future(self._accept_loop())
        await self._stopping.wait()
        accepting.cancel()
        for transport in list(self._piped.values()):
            _abort(transport)
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, addr = await loop.sock_accept(self.listener)
            except OSError as exc:  # out of descriptors, say: try again shortly
                logger.warning("admin page: cannot accept a connection: %s", exc)
                await asyncio.sleep(0.5)
                continue
            if self._over_limit(str(addr[0])):
                sock.close()
                continue
            task = asyncio.ensure_future(self._connection(sock, addr))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _over_limit(self, client: str) -> bool:
        handed = self.backend.open_from()
        total = len(handed) + sum(self._pending.values())
        mine = handed.count(client) + self._pending[client]
        if total < MAX_OPEN and mine < MAX_PER_CLIENT:
            return False
        self._refused += 1
        now = time.monotonic()
        if now - self._refusal_logged >= REFUSAL_LOG_EVERY_S:
            self._refusal_logged = now
            logger.warning(
                "admin page: refused %s connection(s) (%s open, %s from %s; limits %s and %s)",
                self._refused,
                total,
                mine,
                client,
                MAX_OPEN,
                MAX_PER_CLIENT,
            )
            self._refused = 0
        return True

    async def _connection(self, sock: socket.socket, addr: tuple[Any, ...]) -> None:
        client = str(addr[0])
        self._pending[client] += 1
        pending = True  # counted in ``_pending`` (until waitress has it, or it ends)
        owned = True  # this coroutine still owns ``sock`` (not handed over, no transport)
        try:
            first = (
                b"" if self.tls is None else await asyncio.wait_for(_first_byte(sock), HANDSHAKE_S)
            )
            if self.tls is None or (first and first[0] != TLS_RECORD):
                owned = pending = False
                self._handed(client)
                self.backend.adopt(sock, addr, "http")  # plain: the app redirects to HTTPS
                return
            if not first:
                return
            reader, writer = await _accept_tls(sock, self.tls)
            owned = pending = False  # the transport closes it; waitress gets the pair
            self._handed(client)
            await self._pipe(reader, writer, addr)
        except (OSError, asyncio.TimeoutError, ssl.SSLError) as exc:
            logger.debug("admin page: connection from %s ended: %r", client, exc)
        finally:
            if pending:
                self._handed(client)
            if owned:
                sock.close()

    def _handed(self, client: str) -> None:
        """One of ``client``'s connections is waitress's now, or gone: no longer pending."""
        self._pending[client] -= 1
        if self._pending[client] <= 0:
            del self._pending[client]

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, addr: tuple[Any, ...]
    ) -> None:
        """Pump bytes between the TLS connection and waitress until either side ends."""
        client = str(addr[0])
        inner, outer = socket.socketpair()
        try:
            self.backend.adopt(inner, addr, "https")
        except BaseException:
            inner.close()
            outer.close()
            raise
        key = (client, int(addr[1]))
        self._piped[key] = writer.transport  # type: ignore[assignment]
        try:
            inner_reader, inner_writer = await asyncio.open_unix_connection(sock=outer)
            await asyncio.gather(
                _copy(reader, inner_writer),
                _copy(inner_reader, writer),
                return_exceptions=True,
            )
        finally:
            self._piped.pop(key, None)
            _abort(writer.transport)


def _abort(transport: asyncio.BaseTransport) -> None:
    """Drop a connection at once. A TLS transport already closed is left alone: Python
    3.11.2's (Debian 12's) ``abort`` of one raises AttributeError (its protocol is gone),
    which logged a traceback at the end of every HTTPS connection on the device."""
    if transport.is_closing():
        return
    transport.abort()  # type: ignore[attr-defined]


async def _first_byte(sock: socket.socket) -> bytes:
    """The first byte the client sent, left unread (b"" when it closed)."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(sock.fileno(), readable)
    try:
        await ready
    finally:
        loop.remove_reader(sock.fileno())
    return sock.recv(1, socket.MSG_PEEK)


async def _accept_tls(
    sock: socket.socket, context: ssl.SSLContext
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Streams over ``sock`` once the TLS handshake (within ``HANDSHAKE_S``) has ended."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=CHUNK)
    protocol = asyncio.StreamReaderProtocol(reader)
    transport, _ = await loop.connect_accepted_socket(
        lambda: protocol, sock, ssl=context, ssl_handshake_timeout=HANDSHAKE_S
    )
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until the reader ends; then close the writer (its buffer is sent first)."""
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (OSError, ssl.SSLError):
        pass
    finally:
        writer.close()


def _quiet_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Client errors (a browser that refuses the certificate, a reset) without tracebacks."""
    error = context.get("exception")
    if isinstance(error, (OSError, ssl.SSLError)):
        logger.debug("admin page: %s: %r", context.get("message"), error)
        return
    loop.default_exception_handler(context)
