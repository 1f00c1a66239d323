"""The one processing chain: the frame processor behind the control lock, under the
thermal action and the named fps caps.

``ProcessingChain`` wraps a processor that has ``process``, ``reset`` and the
``quality``/``set_quality`` pair (``FrameProcessor``) and is itself one, so the
runner and the adaptive controller use it in the processor's place. It owns:

- the control lock: ``process`` holds ``lock``, so whoever else holds it (the
  control core applying a settings change) sees the processor between frames;
- the thermal action: ``set_action`` may be called from any thread (the
  governor's); the action takes effect at the start of the next frame, on the
  processing thread. The ladder's level is kept as asked, and the processor
  gets it under the action's limits (``ThermalLimits.limit``): the ladder still
  steps down below the thermal limit and climbs back up to it. While swapping
  is not allowed (CRITICAL) the processor is not called at all: frames go on
  unswapped, dimmed, with the cooling notice on them, so the display and the
  watchdog stay alive; the processor is reset when swapping resumes (its
  tracks are stale by then);
- the named fps caps (``set_cap``): the lowest cap in force is applied to the
  adaptive controller (``bind_caps``), and names the drops: the thermal
  governor's cap drops frames as ``thermal``, the PIR sensor's (nobody there)
  as ``no_motion``;
- the presence signal (``presence``, see ``presence.py``): while it says
  nobody is there (the PIR's no motion, the pipeline's no face), frames leave
  the chain marked ``idle`` (the display's idle screen).
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from appliance.media.frames import Frame
from appliance.media.overlays import draw_notice
from appliance.pipeline.presence import Presence
from appliance.pipeline.quality import QualityLevel
from appliance.pipeline.telemetry import Drop

logger = logging.getLogger(__name__)


class TunableProcessor(Protocol):
    """``FrameProcessor`` as the chain needs it."""

    @property
    def quality(self) -> QualityLevel: ...

    def set_quality(self, level: QualityLevel) -> None: ...

    def process(self, frame: Frame) -> Frame: ...

    def reset(self) -> None: ...


class ThermalLimits(Protocol):
    """What the chain needs of a thermal action (``appliance.thermal.action.ThermalAction``).

    The pipeline does not import the thermal package (it sits above the pipeline):
    the governor hands its actions in through this shape.
    """

    @property
    def swapping(self) -> bool: ...

    @property
    def notice(self) -> str: ...

    def limit(self, level: QualityLevel) -> QualityLevel: ...


class CapTarget(Protocol):
    """Where the lowest fps cap goes (``AdaptiveController``)."""

    def set_fps_cap(
        self, fps: float | None, reason: str = "", drop: Drop = Drop.THERMAL
    ) -> None: ...


class Unlimited:
    """No thermal limits: the chain's action until the governor's first one."""

    swapping = True
    notice = ""

    def __repr__(self) -> str:
        return "Unlimited()"

    def limit(self, level: QualityLevel) -> QualityLevel:
        return level


class ProcessingChain:
    """``inner`` behind ``lock``, under the governor's latest action and the fps caps."""

    def __init__(
        self,
        inner: TunableProcessor,
        lock: threading.RLock | None = None,
        presence: Presence | None = None,
    ) -> None:
        self.inner = inner
        self.lock = lock or threading.RLock()
        self._asked = inner.quality
        self._action: ThermalLimits = Unlimited()
        self._pending: ThermalLimits | None = None
        self._pending_lock = threading.Lock()
        self._caps: dict[str, tuple[float, Drop]] = {}
        self._cap_target: CapTarget | None = None
        self.presence = presence or Presence()  # is anybody there (both idle timers)

    def __repr__(self) -> str:
        return f"ProcessingChain({self.inner!r}, {self._action!r})"

    # ---- the thermal action -----------------------------------------------------------------

    @property
    def action(self) -> ThermalLimits:
        """The action in force on the processing thread."""
        return self._action

    def set_action(self, action: ThermalLimits) -> None:
        """Use ``action`` from the next frame on (any thread)."""
        with self._pending_lock:
            self._pending = action

    # ---- the named fps caps -----------------------------------------------------------------

    def bind_caps(self, target: CapTarget) -> None:
        """Apply the lowest fps cap to ``target`` (the adaptive controller) from now on."""
        self._cap_target = target
        self._apply_caps()

    def set_cap(self, why: str, fps: float | None, drop: Drop = Drop.THERMAL) -> None:
        """Cap named ``why`` at ``fps`` (None: lift it); its drops count as ``drop``."""
        with self._pending_lock:
            if fps is None:
                self._caps.pop(why, None)
            else:
                self._caps[why] = (fps, drop)
        self._apply_caps()

    @property
    def caps(self) -> dict[str, tuple[float, Drop]]:
        with self._pending_lock:
            return dict(self._caps)

    def _apply_caps(self) -> None:
        target = self._cap_target
        if target is None:
            return
        caps = self.caps
        lowest = min(caps.values(), default=None, key=lambda cap: cap[0])
        reasons = ", ".join(sorted(caps)) or "none"
        if lowest is None:
            target.set_fps_cap(None, reasons)
        else:
            target.set_fps_cap(lowest[0], reasons, lowest[1])

    # ---- Tunable: the adaptive controller's side ------------------------------------------

    @property
    def quality(self) -> QualityLevel:
        """The level the ladder asked for (the processor may run under it)."""
        return self._asked

    def set_quality(self, level: QualityLevel) -> None:
        self._asked = level
        with self.lock:
            self.inner.set_quality(self._action.limit(level))

    # ---- Processor: the runner's side -----------------------------------------------------

    def process(self, frame: Frame) -> Frame:
        self._take_pending()
        frame.idle = frame.idle or self.presence.nobody
        if not self._action.swapping:
            draw_notice(frame.image, self._action.notice)
            frame.faces = 0
            frame.swapped = False
            return frame
        with self.lock:
            return self.inner.process(frame)

    def reset(self) -> None:
        """Forget the tracks."""
        with self.lock:
            self.inner.reset()

    def _take_pending(self) -> None:
        with self._pending_lock:
            action, self._pending = self._pending, None
        if action is None:
            return
        resumed = action.swapping and not self._action.swapping
        self._action = action
        with self.lock:
            self.inner.set_quality(action.limit(self._asked))
            if resumed:
                self.inner.reset()
        logger.debug("thermal action %r in force", action)
