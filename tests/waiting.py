"""Waiting for a condition in tests of threaded code, with a generous deadline."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(condition: Callable[[], bool], timeout_s: float = 15.0, poll_s: float = 0.02) -> bool:
    """True as soon as ``condition()`` holds; False if it still does not after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(poll_s)
    return bool(condition())
