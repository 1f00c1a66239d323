"""A tiny sd_notify client: READY, WATCHDOG, STOPPING and STATUS to systemd, no dependency.

systemd names its datagram socket in ``NOTIFY_SOCKET``: a path, or an
abstract socket when it starts with ``@`` (sent with a leading NUL). Without
it every message is a no-op, so the mirror runs the same by hand and under
systemd. ``WATCHDOG_USEC`` is the service's ``WatchdogSec``; a heartbeat is
due every half of it. A failed send is logged once and never raised: the
mirror keeps running, and systemd notices the missing heartbeat itself.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

logger = logging.getLogger(__name__)

DEFAULT_WATCHDOG_S = 10.0  # WatchdogSec assumed when a socket is there but no WATCHDOG_USEC


def socket_address(name: str) -> str | bytes:
    """The ``sendto`` address for ``NOTIFY_SOCKET``: ``@name`` is the abstract ``\\0name``."""
    if name.startswith("@"):
        return b"\0" + name[1:].encode()
    return name


class Notifier:
    """Sends sd_notify messages to ``NOTIFY_SOCKET``; does nothing when it is unset."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        name = env.get("NOTIFY_SOCKET", "")
        self.address: str | bytes | None = socket_address(name) if name else None
        self._watchdog_usec = env.get("WATCHDOG_USEC", "")
        self._sock: socket.socket | None = None
        self._warned = False

    def __repr__(self) -> str:
        return f"Notifier({self.address!r})"

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def watchdog_interval(self) -> float:
        """Seconds between heartbeats: half of ``WATCHDOG_USEC`` (half of a default when unset)."""
        try:
            usec = int(self._watchdog_usec)
        except ValueError:
            usec = 0
        watchdog_s = usec / 1e6 if usec > 0 else DEFAULT_WATCHDOG_S
        return watchdog_s / 2

    def ready(self) -> bool:
        return self.send("READY=1")

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    def stopping(self) -> bool:
        return self.send("STOPPING=1")

    def status(self, text: str) -> bool:
        """``STATUS=text`` (one line: newlines become spaces)."""
        return self.send("STATUS=" + " ".join(text.splitlines()))

    def send(self, message: str) -> bool:
        """Send one message; True when it went out, False when unset or the send failed."""
        if self.address is None:
            return False
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._sock.sendto(message.encode(), self.address)
        except OSError as exc:
            if not self._warned:
                logger.warning("systemd notify socket %r: %s", self.address, exc)
                self._warned = True
            return False
        return True

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
