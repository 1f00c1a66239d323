"""Python's cyclic garbage collector kept off the frames' path.

A full collection walks every tracked object: with the models, settings and
web modules loaded that is some 70,000, and one took 34-35 ms here, a frame
shown a whole frame late each time it ran. Everything alive when the
pipeline starts lives as long as the process, so it is collected once and
then frozen (``gc.freeze``: moved to a generation no collection walks); the
collections that still run see only what the frames allocate. Objects freed
by reference counting (nearly all of a frame's arrays) are freed as before.
"""

from __future__ import annotations

import gc
import logging
import time

logger = logging.getLogger(__name__)


def settle_garbage() -> None:
    """Collect what is garbage now and freeze the rest out of later collections."""
    start = time.perf_counter()
    gc.collect()
    gc.freeze()
    logger.debug(
        "gc: %d objects frozen in %.1f ms",
        gc.get_freeze_count(),
        (time.perf_counter() - start) * 1e3,
    )
