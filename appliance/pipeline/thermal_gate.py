"""A frame processor under the thermal governor: its action applied between frames.

``ThermalGate`` wraps a processor that has ``process``, ``reset`` and the
``quality``/``set_quality`` pair (``FrameProcessor``) and is itself one, so
the runner and the adaptive controller use it in the processor's place.
``set_action`` may be called from any thread (the governor's); the action
takes effect at the start of the next frame, on the processing thread:

- the ladder's level is kept as asked, and the processor gets it under the
  action's limits (``ThermalAction.limit``): the ladder still steps down
  below the thermal limit and climbs back up to it;
- while swapping is not allowed (CRITICAL) the processor is not called at
  all: frames go on unswapped, dimmed, with the cooling notice on them, so
  the display and the watchdog stay alive; the processor is reset when
  swapping resumes (its tracks are stale by then).
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from appliance.media.frames import Frame
from appliance.media.overlays import draw_notice
from appliance.pipeline.quality import QualityLevel

logger = logging.getLogger(__name__)


class TunableProcessor(Protocol):
    """``FrameProcessor`` as the gate needs it."""

    @property
    def quality(self) -> QualityLevel: ...

    def set_quality(self, level: QualityLevel) -> None: ...

    def process(self, frame: Frame) -> Frame: ...

    def reset(self) -> None: ...


class ThermalLimits(Protocol):
    """What the gate needs of a thermal action (``appliance.thermal.action.ThermalAction``).

    The pipeline does not import the thermal package (it sits above the pipeline):
    the governor hands its actions in through this shape.
    """

    @property
    def swapping(self) -> bool: ...

    @property
    def notice(self) -> str: ...

    def limit(self, level: QualityLevel) -> QualityLevel: ...


class Unlimited:
    """No thermal limits: the gate's action until the governor's first one."""

    swapping = True
    notice = ""

    def __repr__(self) -> str:
        return "Unlimited()"

    def limit(self, level: QualityLevel) -> QualityLevel:
        return level


class ThermalGate:
    """``processor`` under the governor's latest action (see the module docstring)."""

    def __init__(self, processor: TunableProcessor) -> None:
        self.processor = processor
        self._asked = processor.quality
        self._action: ThermalLimits = Unlimited()
        self._pending: ThermalLimits | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ThermalGate({self.processor!r}, {self._action!r})"

    @property
    def action(self) -> ThermalLimits:
        """The action in force on the processing thread."""
        return self._action

    def set_action(self, action: ThermalLimits) -> None:
        """Use ``action`` from the next frame on (any thread)."""
        with self._lock:
            self._pending = action

    # ---- Tunable: the adaptive controller's side ------------------------------------------

    @property
    def quality(self) -> QualityLevel:
        """The level the ladder asked for (the processor may run under it)."""
        return self._asked

    def set_quality(self, level: QualityLevel) -> None:
        self._asked = level
        self.processor.set_quality(self._action.limit(level))

    # ---- Processor: the runner's side -----------------------------------------------------

    def process(self, frame: Frame) -> Frame:
        self._take_pending()
        if self._action.swapping:
            return self.processor.process(frame)
        draw_notice(frame.image, self._action.notice)
        frame.faces = 0
        frame.swapped = False
        return frame

    def reset(self) -> None:
        self.processor.reset()

    def _take_pending(self) -> None:
        with self._lock:
            action, self._pending = self._pending, None
        if action is None:
            return
        resumed = action.swapping and not self._action.swapping
        self._action = action
        self.processor.set_quality(action.limit(self._asked))
        if resumed:
            self.processor.reset()
        logger.debug("thermal action %r in force", action)
