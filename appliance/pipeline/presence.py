"""Is anybody there? The one presence signal both idle timers feed and their consumers read.

Two reporters: the pipeline's face clock (``faces``: no face for
``idle_after_s`` of capture time, see ``IdleGate``) and the PIR sensor
(``motion``: no motion for its idle time). Nobody is there while either says
so; the processing chain and the adaptive controller read it to mark frames
``idle`` (the display's idle screen), and each reporter's own drop rule stays
its own (the idle gate's ``idle`` drops, the PIR's ``no_motion`` cap).
"""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger(__name__)

FACES = "faces"  # the pipeline: a face in view lately
MOTION = "motion"  # the PIR sensor: motion lately


class Presence:
    """Each reporter's latest word, present or not (with why); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._absent: dict[str, str] = {}

    def report(self, reporter: str, present: bool, reason: str = "") -> bool:
        """Record ``reporter``'s word; True when it changed."""
        with self._lock:
            was_absent = reporter in self._absent
            if present:
                self._absent.pop(reporter, None)
            else:
                self._absent[reporter] = reason
        changed = was_absent == present
        if changed:
            logger.debug("presence: %s says %s (%s)", reporter, present, reason or "-")
        return changed

    @property
    def nobody(self) -> bool:
        """True while any reporter says nobody is there."""
        with self._lock:
            return bool(self._absent)

    def absent(self, reporter: str) -> bool:
        with self._lock:
            return reporter in self._absent

    def reasons(self) -> dict[str, str]:
        """Reporter -> why it says nobody is there (empty: somebody may be)."""
        with self._lock:
            return dict(self._absent)
