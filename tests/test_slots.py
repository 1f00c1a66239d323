"""LatestSlot: bounded, latest-wins, non-blocking put, close wakes waiters."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from appliance.errors import ConfigError
from appliance.pipeline.slots import LatestSlot


def test_put_replaces_the_held_item_and_returns_it() -> None:
    slot: LatestSlot[int] = LatestSlot()
    assert slot.put(1) is None
    assert slot.put(2) == 1
    assert len(slot) == 1
    assert slot.get(0) == 2
    assert slot.get(0) is None


def test_capacity_two_keeps_the_two_newest_oldest_first() -> None:
    slot: LatestSlot[int] = LatestSlot(2)
    assert slot.put(1) is None
    assert slot.put(2) is None
    assert slot.put(3) == 1
    assert [slot.get(0), slot.get(0), slot.get(0)] == [2, 3, None]
    assert slot.high_water == 2


@pytest.mark.parametrize("capacity", [0, 3, -1])
def test_capacity_is_one_or_two(capacity: int) -> None:
    with pytest.raises(ConfigError, match="1 or 2"):
        LatestSlot[int](capacity)


def test_get_times_out_with_none() -> None:
    slot: LatestSlot[int] = LatestSlot()
    start = time.monotonic()
    assert slot.get(0.05) is None
    assert time.monotonic() - start >= 0.04


def test_close_wakes_a_waiter_and_keeps_what_is_held() -> None:
    slot: LatestSlot[int] = LatestSlot()
    got: list[int | None] = []
    waiter = threading.Thread(target=lambda: got.append(slot.get(10.0)))
    waiter.start()
    time.sleep(0.05)
    start = time.monotonic()
    slot.close()
    waiter.join(2.0)
    assert not waiter.is_alive()
    assert time.monotonic() - start < 1.0
    assert got == [None]

    held: LatestSlot[int] = LatestSlot()
    held.put(5)
    held.close()
    assert held.closed and not held.drained
    assert held.put(6) == 6  # refused after close
    assert held.get(0) == 5
    assert held.drained
    assert held.get(0) is None


def test_clear_returns_everything_held() -> None:
    slot: LatestSlot[int] = LatestSlot(2)
    slot.put(1)
    slot.put(2)
    assert slot.clear() == [1, 2]
    assert len(slot) == 0


def test_fast_producer_slow_consumer_stays_bounded_and_ordered() -> None:
    slot: LatestSlot[int] = LatestSlot(2)
    received: list[int] = []
    dropped: list[int] = []

    def consume() -> None:
        while (item := slot.get(1.0)) is not None:
            received.append(item)
            time.sleep(0.001)

    consumer = threading.Thread(target=consume)
    consumer.start()
    for i in range(20_000):
        old = slot.put(i)
        if old is not None:
            dropped.append(old)
    slot.close()
    consumer.join(5.0)
    assert not consumer.is_alive()
    assert slot.high_water <= 2
    assert all(b > a for a, b in itertools.pairwise(received))
    assert received[-1] == 19_999  # the newest is never lost
    assert sorted(received + dropped) == list(range(20_000))  # every item taken or counted
