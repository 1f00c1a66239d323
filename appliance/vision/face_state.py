"""What the swap remembers about one followed face, kept with its track.

Each ``Track`` (``appliance.vision.tracker``) is made with a ``FaceState``
and drops it with itself: when the tracker loses a face, merges two tracks
or is reset, that face's memories go too, with nothing to prune in step.
One face's state is used by one swap worker at a time (the tracks of a
frame are swapped in parallel, each by one worker).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from appliance.vision.blend import ColourMemory
from appliance.vision.eye_handover import EyeHandOver
from appliance.vision.reliability import Fade
from appliance.vision.shape_transfer import NeutralMesh

logger = logging.getLogger(__name__)


@dataclass
class FaceState:
    """One face's swap strength, neutral mesh, eased colour and eye hand-over."""

    fade: Fade = field(default_factory=Fade)  # how fully it is swapped, eased
    neutral: NeutralMesh = field(default_factory=NeutralMesh)  # shape transfer's rest mesh
    colour: ColourMemory = field(default_factory=ColourMemory)  # colour, detail, shading
    eyes: EyeHandOver = field(default_factory=EyeHandOver)  # blinks shown as the visitor's
