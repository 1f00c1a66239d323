"""A bounded latest-wins hand-off between two threads.

``put()`` never blocks: when the slot is full the oldest item makes room and
is returned, so the producer can count the drop. ``close()`` ends the input:
waiters wake, items already held can still be taken, and ``drained`` turns
true once the slot is closed and empty.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Generic, TypeVar

from appliance.errors import ConfigError

logger = logging.getLogger(__name__)

T = TypeVar("T")

MAX_CAPACITY = 2


class LatestSlot(Generic[T]):
    """Holds at most ``capacity`` (1 or 2) items; the newest always gets in."""

    def __init__(self, capacity: int = 1) -> None:
        if not 1 <= capacity <= MAX_CAPACITY:
            raise ConfigError(f"slot capacity must be 1 or 2, got {capacity}")
        self.capacity = capacity
        self._items: deque[T] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._high_water = 0

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)

    @property
    def high_water(self) -> int:
        """The most items the slot ever held at once (never above ``capacity``)."""
        with self._cond:
            return self._high_water

    @property
    def closed(self) -> bool:
        with self._cond:
            return self._closed

    @property
    def drained(self) -> bool:
        """Closed and empty: ``get()`` will never return an item again."""
        with self._cond:
            return self._closed and not self._items

    def put(self, item: T) -> T | None:
        """Add ``item``; return the item it displaced (the oldest), if any.

        After ``close()`` the item is not taken and is returned itself.
        """
        with self._cond:
            if self._closed:
                return item
            dropped = self._items.popleft() if len(self._items) >= self.capacity else None
            self._items.append(item)
            self._high_water = max(self._high_water, len(self._items))
            self._cond.notify()
            return dropped

    def get(self, timeout_s: float | None = None) -> T | None:
        """The oldest item held; None after ``timeout_s`` or once drained."""
        with self._cond:
            self._cond.wait_for(lambda: bool(self._items) or self._closed, timeout_s)
            return self._items.popleft() if self._items else None

    def close(self) -> None:
        """Accept no more items and wake every waiter; idempotent."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def clear(self) -> list[T]:
        """Remove and return everything held (oldest first)."""
        with self._cond:
            items = list(self._items)
            self._items.clear()
            return items
