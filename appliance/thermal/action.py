"""What each thermal state does to the pipeline: a ``ThermalAction`` per state.

- NORMAL: nothing;
- WARM: at most 3/4 of the target rate, the feathered blend, full detection
  half as often;
- HOT (the CPU light mode): at most half the target rate, detection a third
  as often, processing at 480 lines at most, the smallest detector and the
  geometric swapper (no neural swapper);
- CRITICAL: HOT's limits, and no swapping at all: frames go on unswapped with
  a cooling notice, so the display, the admin UI and the service watchdog
  (fed while frames flow) stay alive.

An action limits and never raises quality: ``apply`` gives the pipeline
settings under it, ``limit`` a degrade-ladder level under it (the ladder still
steps down further, and back up to the limit).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, Literal

from appliance.config import Settings, updated
from appliance.pipeline.quality import Blend, QualityLevel
from appliance.thermal.governor import ThermalState

logger = logging.getLogger(__name__)

DetectorModel = Literal["short", "full"]

COOLING_NOTICE = "Cooling down - back in a few minutes"
FPS_SCALE = {ThermalState.WARM: 0.75, ThermalState.HOT: 0.5, ThermalState.CRITICAL: 0.5}
DETECT_SCALE = {ThermalState.WARM: 2, ThermalState.HOT: 3, ThermalState.CRITICAL: 3}
LIGHT_HEIGHT = 480
LIGHT_SWAPPER = "geometric"
LIGHT_DETECTOR: DetectorModel = "short"
MIN_FPS = 1.0
MAX_REDETECT = 60  # PipelineSettings.redetect_every allows up to 60


@dataclass(frozen=True)
class ThermalAction:
    """Limits for one state; None leaves a setting as configured."""

    state: ThermalState
    fps_cap: float | None = None  # process at most this many frames a second
    blend: Blend | None = None  # this blend instead of the configured one
    redetect_min: int | None = None  # at least this many frames between full detections
    max_height: int | None = None  # process frames at most this many lines high
    swapper: str | None = None  # this swapper instead (geometric: the neural one off)
    detector: DetectorModel | None = None  # this detector model instead
    swapping: bool = True  # False: frames go on unswapped, with ``notice``
    notice: str = ""

    def apply(self, settings: Settings) -> Settings:
        """``settings`` under this action's limits (a new, validated object)."""
        pipeline: dict[str, Any] = {}
        if self.fps_cap is not None:
            pipeline["target_fps"] = min(settings.pipeline.target_fps, self.fps_cap)
        if self.redetect_min is not None:
            pipeline["redetect_every"] = max(settings.pipeline.redetect_every, self.redetect_min)
        swap: dict[str, Any] = {}
        if self.blend is not None:
            swap["blend"] = self.blend
        if self.swapper is not None:
            swap["swapper"] = self.swapper
        changes: dict[str, Any] = {"pipeline": pipeline, "swap": swap}
        if self.detector is not None:
            changes["detector"] = {"model": self.detector}
        return updated(settings, changes)

    def limit(self, level: QualityLevel) -> QualityLevel:
        """A degrade-ladder level under this action's limits (``level`` when within them)."""
        blend = self.blend or level.blend
        every = max(level.redetect_every, self.redetect_min or 0)
        height = level.max_height
        if self.max_height is not None and (height is None or height > self.max_height):
            height = self.max_height
        if (blend, every, height) == (level.blend, level.redetect_every, level.max_height):
            return level
        name = f"{level.name}, {self.state.label} limits"
        return dataclasses.replace(
            level, blend=blend, redetect_every=every, max_height=height, name=name
        )

    def describe(self) -> str:
        """The limits in words, for logs and telemetry."""
        parts = []
        if not self.swapping:
            parts.append("swapping stopped")
        if self.fps_cap is not None:
            parts.append(f"at most {self.fps_cap:g} fps")
        if self.blend is not None:
            parts.append(f"{self.blend} blend")
        if self.redetect_min is not None:
            parts.append(f"detect every {self.redetect_min}+ frames")
        if self.max_height is not None:
            parts.append(f"at most {self.max_height} lines")
        if self.detector is not None:
            parts.append(f"{self.detector} detector")
        if self.swapper is not None:
            parts.append(f"{self.swapper} swapper")
        return ", ".join(parts) or "no limits"


def action_for(state: ThermalState, base: Settings) -> ThermalAction:
    """The action for ``state``, with rates scaled from the configured ``base`` settings."""
    if state == ThermalState.NORMAL:
        return ThermalAction(state)
    fps_cap = max(MIN_FPS, round(base.pipeline.target_fps * FPS_SCALE[state], 1))
    redetect_min = min(base.pipeline.redetect_every * DETECT_SCALE[state], MAX_REDETECT)
    if state == ThermalState.WARM:
        return ThermalAction(state, fps_cap=fps_cap, blend="feather", redetect_min=redetect_min)
    return ThermalAction(
        state,
        fps_cap=fps_cap,
        blend="feather",
        redetect_min=redetect_min,
        max_height=LIGHT_HEIGHT,
        swapper=LIGHT_SWAPPER,
        detector=LIGHT_DETECTOR,
        swapping=state != ThermalState.CRITICAL,
        notice=COOLING_NOTICE if state == ThermalState.CRITICAL else "",
    )
