"""Which settings apply to a running ``FrameProcessor`` at once, and applying them.

Live (between frames): the label, the swap look (everything but the swapper
kind), detection interval, faces swapped, detection score and face count,
and the liveness mode and prompt of a live camera's gate (a file or the demo
photo has none).
Everything else (swapper kind, detector model, latency budget, target fps,
sections added later) is saved and applies at the next start, unless an
``appliers`` entry (a dotted prefix -> function) applies it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from appliance.config import Settings
from appliance.pipeline.processor import FrameProcessor
from appliance.vision.label import Labeler

logger = logging.getLogger(__name__)

Applier = Callable[[Settings], None]

LIVE_SECTIONS = ("label", "swap", "liveness")
NOT_LIVE = frozenset({"swap.swapper"})
LIVE_KEYS = frozenset(
    {
        "pipeline.redetect_every",
        "pipeline.faces",
        "pipeline.max_faces",
        "detector.min_score",
        "detector.max_faces",
    }
)


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def changed_keys(old: Settings, new: Settings) -> list[str]:
    """The dotted keys whose values differ, in model order."""
    before = flatten(old.model_dump(mode="json"))
    after = flatten(new.model_dump(mode="json"))
    return [key for key in after if before.get(key, _MISSING) != after[key]]


_MISSING = object()


def _under(key: str, prefix: str) -> bool:
    return key == prefix or key.startswith(prefix + ".")


def applies_live(key: str, appliers: Iterable[str] = ()) -> bool:
    if key in NOT_LIVE:
        return False
    if key in LIVE_KEYS or any(_under(key, section) for section in LIVE_SECTIONS):
        return True
    return any(_under(key, prefix) for prefix in appliers)


def apply_live(
    processor: FrameProcessor,
    new: Settings,
    changed: list[str],
    appliers: Mapping[str, Applier],
) -> None:
    """Apply the live keys of ``changed``; call between frames (holding the processor's lock)."""
    touched = {key.split(".", 1)[0] for key in changed}
    if "label" in touched:
        processor.labeler = Labeler(new.label, processor.labeler.font_path)
    if any(_under(k, "swap") and k not in NOT_LIVE for k in changed):
        kind = processor.swapper.settings.swapper  # the running swapper stays until a restart
        processor.swapper.settings = new.swap.model_copy(update={"swapper": kind})
        processor.shaper.strength = new.swap.shape_transfer
    if "pipeline" in touched:
        processor.redetect_every = new.pipeline.redetect_every
        processor.max_faces = 1 if new.pipeline.faces == "largest" else new.pipeline.max_faces
    if "detector" in touched:
        processor.analyzer.detector.min_score = new.detector.min_score
        processor.analyzer.detector.max_faces = new.detector.max_faces
    if {"label", "liveness"} & touched and processor.liveness.gate is not None:
        # a live camera's gate: the new mode (faces keep their state if it stays) and prompt
        processor.liveness.configure(new.liveness, processor.labeler)
    for prefix, applier in appliers.items():
        if any(_under(key, prefix) for key in changed):
            applier(new)
