"""Live-preview slots: at most ``limit`` streams; one whose client stopped reading loses its slot.

A stream holds a server thread; a client that stops reading (a phone put to
sleep with the page open, a hostile client) leaves that thread blocked in
the server's write once the socket and the server's buffer are full. The
stream ``touch``es its slot each time it gets control back (the last part
was taken, or it waited for a frame); a slot not touched for ``stall_s`` is
stalled. Stalled slots are given up (``reap``) when a new client asks for a
slot and whenever another stream runs: the slot is free at once, and its
``disconnect`` closes the connection, which wakes the blocked thread. Each
end is logged on one line, without a traceback.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)


class PreviewSlot:
    """One open stream's place; ``release`` it when the stream ends (more calls do nothing)."""

    def __init__(
        self, owner: PreviewSlots, client: str, disconnect: Callable[[], object] | None
    ) -> None:
        self.owner = owner
        self.client = client
        self.disconnect = disconnect
        self.last_progress = owner.clock()
        self.frames = 0
        self.stalled = False

    def touch(self) -> None:
        self.last_progress = self.owner.clock()

    def sent(self) -> None:
        self.frames += 1
        self.touch()

    def release(self) -> None:
        self.owner.release(self)


class PreviewSlots:
    """Hands out at most ``limit`` slots, taking back those stalled for ``stall_s``."""

    def __init__(
        self, limit: int, stall_s: float, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.stall_s = stall_s
        self.clock = clock
        self._lock = threading.Lock()
        self._held: list[PreviewSlot] = []

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)

    def acquire(
        self, client: str, disconnect: Callable[[], object] | None = None
    ) -> PreviewSlot | None:
        """A slot for ``client`` (stalled ones are given up first), or None when all are busy."""
        self.reap()
        with self._lock:
            if len(self._held) >= self.limit:
                return None
            slot = PreviewSlot(self, client, disconnect)
            self._held.append(slot)
        logger.info("live preview to %s started (%s open)", client, len(self))
        return slot

    def reap(self) -> int:
        """Give up every stalled slot and close its connection; returns how many."""
        now = self.clock()
        with self._lock:
            stalled = [s for s in self._held if now - s.last_progress >= self.stall_s]
            for slot in stalled:
                slot.stalled = True
                self._held.remove(slot)
        for slot in stalled:
            logger.warning(
                "live preview to %s closed: it read nothing for %.0f s", slot.client, self.stall_s
            )
            if slot.disconnect is not None:
                slot.disconnect()
        return len(stalled)

    def release(self, slot: PreviewSlot) -> None:
        with self._lock:
            if slot not in self._held:
                return
            self._held.remove(slot)
        logger.info("live preview to %s ended after %s frames", slot.client, slot.frames)
