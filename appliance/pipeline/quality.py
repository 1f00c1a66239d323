"""Quality levels: what the processor does at each step of the degrade ladder.

Level 0 is the configured quality. Each further level keeps the previous
level's savings and adds one: Poisson blending becomes the feathered blend
(only when Poisson was configured), then full detection runs half as often,
then every face gets the light landmarks (FaceMesh v1 and the iris model,
about half the attention model's cost: ``vision.light_landmarks``), then
frames are processed at 720 and then 540 lines (only steps below the
input's own height), and last the faces' landmarks run in turn (every
other frame for one face, one face a frame for more: ``tracker.turn_cycle``;
a face the liveness gate waits for still every frame), a face coasting on
its last motion in between. Steps that would change nothing
are left out.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Literal

logger = logging.getLogger(__name__)

Blend = Literal["feather", "poisson"]
PROCESSING_HEIGHTS = (720, 540)
DETECT_INTERVAL_FACTOR = 2


@dataclass(frozen=True)
class QualityLevel:
    """One step of the ladder; ``max_height`` None means the input's own resolution."""

    blend: Blend
    redetect_every: int
    max_height: int | None = None
    name: str = "full quality"
    light_landmarks: bool = False  # every face on the light landmark models
    alternate_landmarks: bool = False  # the faces' landmarks in turn (``tracker.turn_cycle``)


def build_ladder(
    blend: Blend, redetect_every: int, input_height: int, light_landmarks: bool = False
) -> list[QualityLevel]:
    """The ladder for a configuration and an input height, best quality first;
    ``light_landmarks``: every face is on the light landmarks already (one CPU)."""
    level = QualityLevel(blend, redetect_every, light_landmarks=light_landmarks)
    ladder = [level]
    if blend == "poisson":
        level = dataclasses.replace(level, blend="feather", name="feathered blend")
        ladder.append(level)
    every = redetect_every * DETECT_INTERVAL_FACTOR
    level = dataclasses.replace(level, redetect_every=every, name=f"detect every {every} frames")
    ladder.append(level)
    if not light_landmarks:
        level = dataclasses.replace(level, light_landmarks=True, name="light landmarks")
        ladder.append(level)
    for height in PROCESSING_HEIGHTS:
        if input_height > height:
            level = dataclasses.replace(level, max_height=height, name=f"processing at {height}p")
            ladder.append(level)
    level = dataclasses.replace(level, alternate_landmarks=True, name="landmarks in turn")
    ladder.append(level)
    return ladder
