"""The bench's quality rows: what the swap it timed looks like, as ``mirror eval`` figures.

For each clip the bench plays (the 1-face clip, at each size), the first
``frames`` frames are swapped to the bench's identity by ``eval.evaluate`` and
measured: texture stretch, fill step, shading, detail, gaze error and the
worst blendshape's amplitude (``eval.artefacts.THRESHOLDS``). None of these
needs the recogniser (the ``eval`` extra): it is not loaded, and the identity
distances (d_src, d_orig, moved) are left to ``mirror eval``. They run after
every timing, so they never share the CPU with a timed run; 30 frames of a
1280x720 clip took about 5 s on the 2-core development machine.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from appliance.config import Settings
from appliance.eval import artefacts
from appliance.eval.evaluate import Models, evaluate
from appliance.media.frames import Image
from appliance.modelstore import ModelStore
from appliance.tools.live_clip import JpegClip

logger = logging.getLogger(__name__)

DEFAULT_FRAMES = 30  # frames measured per clip (0: no quality rows)
CLIP_FPS = 30.0
# (figure, column title, format); amplitude is printed with its blendshape's name
FIGURES = (
    ("stretch", "stretch", ".2f"),
    ("fill_step", "fill", ".2f"),
    ("shading", "shade", ".3f"),
    ("detail_ratio", "detail", ".2f"),
    ("gaze_error", "gaze", ".1f"),
    ("amplitude", "amp", ".2f"),
)


@dataclass(frozen=True)
class _Played:
    """The first ``count`` frames of a bench clip, as ``evaluate`` plays them."""

    path: Path
    fps: float
    clip: JpegClip
    count: int

    def images(self) -> Iterator[Image]:
        for index in range(min(self.count, len(self.clip))):
            yield self.clip.decode(index)


@dataclass
class QualityRow:
    """One clip's figures (None: not measurable on these frames)."""

    clip: str
    size: tuple[int, int]
    frames: int
    frames_swapped: int
    stretch: float | None
    fill_step: float | None
    shading: float | None
    detail_ratio: float | None
    gaze_error: float | None
    amplitude: float | None
    amplitude_blendshape: str | None


def measure_quality(
    clips: list[tuple[str, JpegClip]],
    identity: str,
    settings: Settings,
    store: ModelStore,
    frames: int = DEFAULT_FRAMES,
) -> list[QualityRow]:
    """The quality row of each (name, 1-face clip), ``frames`` frames each."""
    if frames < 1 or not clips:
        return []
    models = Models.load(settings, store, recognise=False)
    rows = []
    for name, clip in clips:
        played = _Played(Path(name), CLIP_FPS, clip, frames)
        report = evaluate(
            identity, played, settings, store, models=models, every=frames, max_frames=frames
        ).report
        rows.append(
            QualityRow(
                clip=name,
                size=clip.size,
                frames=report.frames,
                frames_swapped=report.frames_swapped,
                stretch=report.stretch,
                fill_step=report.fill_step,
                shading=report.shading,
                detail_ratio=report.detail_ratio,
                gaze_error=report.gaze_error,
                amplitude=report.amplitude,
                amplitude_blendshape=report.amplitude_blendshape,
            )
        )
        logger.info("quality of %s measured over %d frames", name, report.frames)
    return rows


def _cell(row: QualityRow, name: str, fmt: str) -> str:
    value = getattr(row, name)
    if value is None:
        return "n/a"
    text = format(value, fmt)
    if artefacts.within(name, value) is False:
        text += "(!)"
    if name == "amplitude" and row.amplitude_blendshape:
        text += f" {row.amplitude_blendshape}"
    return text


def _bounds(name: str) -> str:
    low, high = artefacts.THRESHOLDS[name]
    if low is None:
        return f"<= {high:g}"
    return f">= {low:g}" if high is None else f"{low:g}-{high:g}"


def format_quality(rows: list[QualityRow], identity: str) -> str:
    """The quality rows as a table; (!) marks a figure outside its threshold."""
    frames = max((r.frames for r in rows), default=0)
    title = (
        f"quality of the 1-face swap ({Path(identity).name}, first {frames} frames of each"
        " clip; `mirror eval` figures, (!) outside the bounds: "
        + ", ".join(f"{title} {_bounds(name)}" for name, title, _ in FIGURES)
        + ")"
    )
    table = [["clip", "size", "swapped", *(title for _, title, _ in FIGURES)]]
    for r in rows:
        table.append(
            [
                r.clip,
                f"{r.size[0]}x{r.size[1]}",
                f"{r.frames_swapped}/{r.frames}",
                *(_cell(r, name, fmt) for name, _, fmt in FIGURES),
            ]
        )
    widths = [max(len(line[n]) for line in table) for n in range(len(table[0]))]
    lines = [
        " ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in table
    ]
    return "\n".join([title, lines[0], "-" * len(lines[0]), *lines[1:]])


def quality_markdown(rows: list[QualityRow], identity: str) -> str:
    """The quality rows as a Markdown section for the bench page."""
    head = [
        "clip",
        "size",
        "swapped",
        *(f"{title} ({_bounds(name)})" for name, title, _ in FIGURES),
    ]
    lines = [
        "## Quality",
        "",
        f"The 1-face swap of {Path(identity).name}, measured as `mirror eval` does over"
        " the first frames of each clip; (!) marks a figure outside its bounds.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in rows:
        cells = [r.clip, f"{r.size[0]}x{r.size[1]}", f"{r.frames_swapped}/{r.frames}"]
        cells += [_cell(r, name, fmt) for name, _, fmt in FIGURES]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
