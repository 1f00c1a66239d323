"""The liveness gate as a stage of the frame processor: which faces may be swapped.

With settings (a live camera), each followed face goes through a
``LivenessGate``: only LIVE tracks are swapped, and while any face is
UNVERIFIED the frame carries the prompt ("Blink to start"), drawn like the
label (same font, any Unicode) at the other edge of the frame. Without
settings (None: files, stills, the demo photo, which are not a visitor in
front of the camera) there is no gate and every face is swapped.
"""

from __future__ import annotations

import logging
import time

from appliance.config import LabelPosition, LabelSettings, LivenessSettings
from appliance.media.frames import Image
from appliance.timing import add_stage_ms
from appliance.vision.label import Labeler
from appliance.vision.liveness import DEFAULT_PROMPTS, LivenessCounts, LivenessGate
from appliance.vision.tracker import Track

logger = logging.getLogger(__name__)

PROMPT_SIZE = 0.06  # prompt text height, share of the frame's shorter side


def prompt_labeler(settings: LivenessSettings, label: Labeler) -> Labeler | None:
    """The prompt for unverified faces, at the other edge from ``label``; None when off."""
    text = settings.prompt or DEFAULT_PROMPTS[settings.mode]
    if settings.mode == "off" or not text:
        return None
    position: LabelPosition = "bottom" if label.settings.position.startswith("top") else "top"
    prompt = LabelSettings(text=text, position=position, size_fraction=PROMPT_SIZE)
    return Labeler(prompt, label.font_path, disclose=False)  # the prompt is not the label


class LivenessStage:
    """The gate (or none) and its prompt, for one processor."""

    def __init__(self, settings: LivenessSettings | None, label: Labeler) -> None:
        self.gate: LivenessGate | None = None
        self.prompt: Labeler | None = None
        self.configure(settings, label)

    def configure(self, settings: LivenessSettings | None, label: Labeler) -> None:
        """Use ``settings`` from the next frame on; faces keep their state if the mode stays."""
        if settings is None:
            self.gate = None
        elif self.gate is None or self.gate.mode != settings.mode:
            self.gate = LivenessGate(settings.mode)
            logger.info("liveness: %s", settings.mode)
        self.prompt = None if settings is None else prompt_labeler(settings, label)

    def verified(
        self, tracks: list[Track], image: Image, stamp_ns: int, timings: dict[str, float]
    ) -> list[Track]:
        """The tracks that may be swapped: all of them without a gate, else the LIVE ones.

        The gate reads each track's raw landmarks in ``image``'s pixels.
        """
        gate = self.gate
        if gate is None:
            return tracks
        start = time.perf_counter()
        height, width = image.shape[:2]
        gate.update({t.track_id: t.raw.points for t in tracks}, (width, height), stamp_ns)
        add_stage_ms(timings, "liveness", start)
        return [t for t in tracks if gate.is_live(t.track_id)]

    def watching(self, track_id: int | None) -> bool:
        """Whether the gate (if any) still waits for this face to show it is live
        (``LivenessGate.watching``): the tracker gives it the full landmark model."""
        return self.gate is not None and self.gate.watching(track_id)

    def draw_prompt(self, image: Image) -> None:
        """Draw the prompt into ``image`` (a frame showing an unverified face)."""
        if self.prompt is not None:
            self.prompt.apply(image)

    def counts(self, followed: int) -> LivenessCounts:
        """Faces by state and the mode; without a gate ("none") all ``followed`` count live."""
        if self.gate is None:
            return LivenessCounts("none", followed, 0)
        return self.gate.counts()

    def reset(self) -> None:
        if self.gate is not None:
            self.gate.reset()
