"""Per-stage timings: milliseconds accumulated per stage name in a frame's dict."""

from __future__ import annotations

import time


def add_stage_ms(timings: dict[str, float], stage: str, start: float) -> float:
    """Add the time since ``start`` (a ``perf_counter`` value) to ``stage``; return now."""
    now = time.perf_counter()
    timings[stage] = timings.get(stage, 0.0) + (now - start) * 1e3
    return now
