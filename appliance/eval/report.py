"""What ``mirror eval`` measured: per-frame records, the clip's figures, and their JSON."""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from appliance.eval import metrics
from appliance.fileio import atomic_write_text

logger = logging.getLogger(__name__)

EXPRESSION_BLENDSHAPES = (
    "jawOpen",
    "eyeBlinkLeft",
    "eyeBlinkRight",
    "mouthSmileLeft",
    "mouthSmileRight",
    "browInnerUp",
)
# the visitor "makes" a blendshape on a frame where its original score is over this:
# the amplitude there (swapped - original) says whether the swap made it as fully
HIGH_SCORE = 0.3
FIGURES = (
    "d_src",
    "d_orig",
    "moved",
    "expression_mean",
    "stability",
    "seam",
    "stretch",
    "gaze_error",
    "shading",
    "detail_ratio",
    "fill_step",
    "amplitude",
    "coverage",
)
_DECIMALS = 5


@dataclass
class FrameRecord:
    """One frame. Distances only on recogniser frames; None where a face was missing."""

    index: int
    face: bool = False  # our tracker followed the visitor's face
    swapped: bool = False
    d_src: float | None = None  # swapped face to the identity photo
    d_orig: float | None = None  # swapped face to the original frame's face
    d_src_unswapped: float | None = None  # original face to the identity photo
    recognised_original: bool | None = None  # None: not a recogniser frame
    recognised_swapped: bool | None = None
    blend_original: dict[str, float] | None = None
    blend_swapped: dict[str, float] | None = None
    change_original: float | None = None  # mean |frame - previous| in the face region
    change_swapped: float | None = None
    seam: float | None = None
    seam_original: float | None = None
    stretch: float | None = None  # texture stretch (appliance.eval.artefacts)
    gaze_error: float | None = None  # degrees
    shading: float | None = None  # shading mismatch
    detail_ratio: float | None = None  # swapped over original fine detail
    fill_step: float | None = None  # the larger of the two below (appliance.eval.seams)
    fill_step_midline: float | None = None
    fill_step_edge: float | None = None
    amplitude: float | None = None  # the largest |swapped - original| blendshape score
    amplitude_blendshape: str | None = None  # ... and which one
    coverage: float | None = None  # the share of the drawn face the identity covers


@dataclass
class EvalReport:
    """The figures of one clip swapped to one identity (see :mod:`appliance.eval.metrics`)."""

    clip: str
    identity: str
    frames: int
    frames_with_face: int
    frames_swapped: int
    every: int
    max_frames: int
    identity_recognised: bool
    recogniser_frames: int  # recogniser frames with a followed face
    recogniser_missing_original: int  # of those, the recogniser found no original face
    recogniser_missing_swapped: int
    recogniser_pairs: int  # frames with both descriptors: d_src, d_orig, moved use these
    d_src: float | None
    d_orig: float | None
    moved: float | None
    d_src_unswapped: float | None
    expression: dict[str, float | None]  # correlation per blendshape
    expression_mean: float | None
    expression_mae: dict[str, float | None]  # mean |original - swapped| per blendshape
    stability: float | None
    seam: float | None
    seam_original: float | None
    stretch: float | None = None  # clip means of the artefact figures
    gaze_error: float | None = None
    shading: float | None = None
    detail_ratio: float | None = None
    fill_step: float | None = None
    fill_step_midline: float | None = None
    fill_step_edge: float | None = None
    # per blendshape, mean (swapped - original) over the frames where the original
    # is over HIGH_SCORE (negative: the swap makes it less); None: no such frame
    expression_high: dict[str, float | None] = field(default_factory=dict)
    amplitude: float | None = None  # the worst blendshape's mean |swapped - original|
    amplitude_blendshape: str | None = None  # ... and its name
    coverage: float | None = None  # clip mean (appliance.eval.coverage)
    elapsed_s: float = 0.0
    per_frame: list[FrameRecord] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = _rounded(dataclasses.asdict(self))
        return result

    def write_json(self, path: Path) -> None:
        atomic_write_text(path, json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n")
        logger.info("wrote %s", path)


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, _DECIMALS)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def summarise(
    records: list[FrameRecord],
    *,
    clip: str,
    identity: str,
    identity_recognised: bool,
    every: int,
    max_frames: int,
) -> EvalReport:
    """The clip's figures from its frame records."""
    sampled = [r for r in records if r.recognised_original is not None]
    pairs = [r for r in sampled if r.d_src is not None and r.d_orig is not None]
    d_src = [r.d_src for r in pairs if r.d_src is not None]
    d_orig = [r.d_orig for r in pairs if r.d_orig is not None]
    unswapped = [r.d_src_unswapped for r in sampled if r.d_src_unswapped is not None]
    expression, mae = _expression(records)
    differing = {name: v for name, v in mae.items() if v is not None}
    worst = max(differing, key=differing.__getitem__) if differing else None
    defined = [v for v in expression.values() if v is not None]
    moving = [r for r in records if r.change_original is not None and r.change_swapped is not None]
    return EvalReport(
        clip=clip,
        identity=identity,
        frames=len(records),
        frames_with_face=sum(r.face for r in records),
        frames_swapped=sum(r.swapped for r in records),
        every=every,
        max_frames=max_frames,
        identity_recognised=identity_recognised,
        recogniser_frames=len(sampled),
        recogniser_missing_original=sum(r.recognised_original is False for r in sampled),
        recogniser_missing_swapped=sum(r.recognised_swapped is False for r in sampled),
        recogniser_pairs=len(pairs),
        d_src=metrics.mean_or_none(d_src),
        d_orig=metrics.mean_or_none(d_orig),
        moved=metrics.moved_share(d_src, d_orig),
        d_src_unswapped=metrics.mean_or_none(unswapped),
        expression=expression,
        expression_mean=metrics.mean_or_none(defined),
        expression_mae=mae,
        stability=metrics.stability_ratio(
            [r.change_swapped for r in moving if r.change_swapped is not None],
            [r.change_original for r in moving if r.change_original is not None],
        ),
        seam=metrics.mean_or_none([r.seam for r in records if r.seam is not None]),
        seam_original=metrics.mean_or_none(
            [r.seam_original for r in records if r.seam_original is not None]
        ),
        stretch=_mean(records, "stretch"),
        gaze_error=_mean(records, "gaze_error"),
        shading=_mean(records, "shading"),
        detail_ratio=_mean(records, "detail_ratio"),
        fill_step=_mean(records, "fill_step"),
        fill_step_midline=_mean(records, "fill_step_midline"),
        fill_step_edge=_mean(records, "fill_step_edge"),
        expression_high=_high(records),
        amplitude=None if worst is None else differing[worst],
        amplitude_blendshape=worst,
        coverage=_mean(records, "coverage"),
        per_frame=records,
    )


def frame_amplitude(
    original: dict[str, float], swapped: dict[str, float]
) -> tuple[float, str] | None:
    """One frame's largest |swapped - original| score over ``EXPRESSION_BLENDSHAPES``."""
    diffs = [(abs(swapped[n] - original[n]), n) for n in EXPRESSION_BLENDSHAPES]
    return max(diffs) if diffs else None


def _high(records: list[FrameRecord]) -> dict[str, float | None]:
    both = [
        (r.blend_original, r.blend_swapped)
        for r in records
        if r.blend_original is not None and r.blend_swapped is not None
    ]
    out: dict[str, float | None] = {}
    for name in EXPRESSION_BLENDSHAPES:
        made = [s[name] - o[name] for o, s in both if o[name] > HIGH_SCORE]
        out[name] = metrics.mean_or_none(made)
    return out


def _mean(records: list[FrameRecord], name: str) -> float | None:
    values = [v for r in records if (v := getattr(r, name)) is not None]
    return metrics.mean_or_none(values)


def _expression(
    records: list[FrameRecord],
) -> tuple[dict[str, float | None], dict[str, float | None]]:
    both = [
        (r.blend_original, r.blend_swapped)
        for r in records
        if r.blend_original is not None and r.blend_swapped is not None
    ]
    correlations: dict[str, float | None] = {}
    differences: dict[str, float | None] = {}
    for name in EXPRESSION_BLENDSHAPES:
        original = [o[name] for o, _ in both]
        swapped = [s[name] for _, s in both]
        correlations[name] = metrics.correlation(
            original, swapped, min_variation=metrics.MIN_EXPRESSION_STD
        )
        differences[name] = metrics.mean_abs_difference(original, swapped)
    return correlations, differences
