"""Which update status still says something now: one under way, or one that just ended.

The installer writes ``status.json`` and the device may restart in the middle (the
"rebooting" state is the last thing an install says; a power cut leaves any state).
A busy status written before this boot is therefore over, whatever it says. A failed
or finished update is news for ``RECENT_S`` after it was written: the HDMI screen shows
it that long; ``mirror doctor`` and ``/metrics`` always report the last status.
"""

from __future__ import annotations

import logging
import time

from appliance.updates.queue import UpdateStatus

logger = logging.getLogger(__name__)

RECENT_S = 600.0  # a failed or finished update is shown this long after it was written
ENDED = ("failed", "done")


def booted_at() -> float:
    """When this system booted, in ``time.time()`` seconds (the boot clock counts
    suspended time too; the monotonic clock is its stand-in where there is none)."""
    clock = getattr(time, "CLOCK_BOOTTIME", None)
    since_boot = time.clock_gettime(clock) if clock is not None else time.monotonic()
    return time.time() - since_boot


def under_way(status: UpdateStatus | None, boot_s: float | None = None) -> bool:
    """True while an update is busy in this boot (written since the system started)."""
    if status is None or not status.busy:
        return False
    return status.at >= (booted_at() if boot_s is None else boot_s)


def worth_showing(
    status: UpdateStatus | None, now_s: float | None = None, boot_s: float | None = None
) -> bool:
    """True while ``status`` is under way, or failed or done within the last ``RECENT_S``."""
    if status is None:
        return False
    if status.busy:
        return under_way(status, boot_s)
    now_s = time.time() if now_s is None else now_s
    return status.state in ENDED and abs(now_s - status.at) <= RECENT_S
