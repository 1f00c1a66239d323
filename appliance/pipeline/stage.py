"""What the runner's worker threads share: context, processor protocol, helpers.

The pipeline rules the workers apply: newest frame wins at every hand-off;
a frame older than the latency budget when the processor would take it,
when it would be handed to the outputs, or when its sink would write it is
dropped as stale, never shown; each worker closes its own resource (source
or sink) when its loop ends.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from appliance.media.frames import Frame
from appliance.pipeline.failures import StageFailures
from appliance.pipeline.slots import LatestSlot
from appliance.pipeline.telemetry import Drop, Telemetry
from appliance.running import Lifecycle

logger = logging.getLogger(__name__)

POLL_S = 0.1  # how often a waiting worker re-checks for shutdown


class Processor(Protocol):
    """What the runner needs of a frame processor (``FrameProcessor`` is one)."""

    def process(self, frame: Frame) -> Frame: ...


class Controller(Protocol):
    """What the runner needs of an adaptive-quality controller (``AdaptiveController``)."""

    def refusal(self, frame: Frame) -> Drop | None:
        """Why not to process ``frame`` (it is then dropped for that reason), or None."""
        ...

    def observe(self, frame: Frame, process_ms: float) -> None: ...


@dataclass(frozen=True)
class StageContext:
    """What every worker shares: telemetry, the stop event, the budget, the back-off cap."""

    telemetry: Telemetry
    stop: threading.Event
    budget_ms: float
    max_backoff_s: float = 1.0

    def failures(self, stage: str) -> StageFailures:
        return StageFailures(stage, self.telemetry, max_pause_s=self.max_backoff_s)


def age_ms(frame: Frame) -> float:
    return (time.monotonic_ns() - frame.capture_ns) / 1e6


def close_quietly(resource: Lifecycle, what: str) -> None:
    """Close ``resource``, logging rather than raising a failure."""
    try:
        resource.close()
    except Exception as exc:
        logger.warning("closing the %s %r failed: %s", what, resource, exc)


def next_frame(slot: LatestSlot[Frame], stop: threading.Event) -> Frame | None:
    """The next frame from ``slot``; None once it is drained or on stop."""
    while not stop.is_set():
        frame = slot.get(POLL_S)
        if frame is not None:
            return None if stop.is_set() else frame
        if slot.drained:
            return None
    return None
