"""A contact sheet a person can look at: original | swapped pairs of sampled frames,
each with its own figures, under a header with the identity photo and the clip's figures.

Frames are kept while the clip plays by :class:`SampleKeeper`, which holds a
bounded, evenly spread set of small copies whatever the clip's length.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from appliance.eval import artefacts
from appliance.eval.report import EvalReport, FrameRecord
from appliance.media.frames import Image

logger = logging.getLogger(__name__)

SAMPLES = 6
COLUMNS = 2  # pairs per row
THUMB_HEIGHT = 240
CAPTION_HEIGHT = 64
HEADER_HEIGHT = 152
GAP = 8
FONT = cv2.FONT_HERSHEY_SIMPLEX
TEXT_SCALE = 0.5
TEXT_BGR = (235, 235, 235)
BACKGROUND_BGR = (32, 32, 32)
LINE_PX = 20


def thumbnail(image: Image, height: int = THUMB_HEIGHT) -> Image:
    h, w = image.shape[:2]
    width = max(1, round(w * height / h))
    return np.asarray(cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA), np.uint8)


@dataclass(frozen=True)
class Sample:
    index: int
    original: Image
    swapped: Image


class SampleKeeper:
    """Keeps every ``stride``-th offered frame, doubling the stride when full."""

    def __init__(self, count: int = SAMPLES) -> None:
        self.count = count
        self.stride = 1
        self._offered = 0
        self.samples: list[Sample] = []

    def offer(self, index: int, original: Image, swapped: Image) -> None:
        turn, self._offered = self._offered, self._offered + 1
        if turn % self.stride:
            return
        self.samples.append(Sample(index, thumbnail(original), thumbnail(swapped)))
        if len(self.samples) >= 4 * self.count:
            self.samples = self.samples[::2]
            self.stride *= 2

    def chosen(self) -> list[Sample]:
        """At most ``count`` samples, spread evenly over those kept."""
        if len(self.samples) <= self.count:
            return list(self.samples)
        picks = np.linspace(0, len(self.samples) - 1, self.count).round().astype(int)
        return [self.samples[i] for i in picks]


def _text(canvas: Image, lines: list[str], x: int, y: int) -> None:
    for row, line in enumerate(lines):
        base = y + LINE_PX * (row + 1) - 6
        cv2.putText(canvas, line, (x, base), FONT, TEXT_SCALE, TEXT_BGR, 1, cv2.LINE_AA)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


_ARTEFACTS = ("stretch", "gaze_error", "shading", "detail_ratio")
_SHORT = {"stretch": "stretch", "gaze_error": "gaze", "shading": "shade", "detail_ratio": "detail"}


def _artefact(record: EvalReport | FrameRecord, name: str) -> str:
    """``name value`` and, when outside its threshold, ``(!)``."""
    value = getattr(record, name)
    flag = "" if artefacts.within(name, value) is not False else "(!)"
    return f"{_SHORT[name]} {_fmt(value, 2)}{flag}"


def summary_lines(report: EvalReport) -> list[str]:
    """The clip's figures as short lines of ASCII text."""
    return [
        f"identity  d_src {_fmt(report.d_src)}  d_orig {_fmt(report.d_orig)}  "
        f"moved {_fmt(report.moved, 2)}  (unswapped d_src {_fmt(report.d_src_unswapped)}, "
        f"{report.recogniser_pairs} frames)",
        f"expression r {_fmt(report.expression_mean)}  stability {_fmt(report.stability)}  "
        f"seam {_fmt(report.seam)} (original {_fmt(report.seam_original)})",
        "artefacts  " + "  ".join(_artefact(report, name) for name in _ARTEFACTS),
        f"frames {report.frames}  with face {report.frames_with_face}  "
        f"swapped {report.frames_swapped}  recogniser misses orig/swap "
        f"{report.recogniser_missing_original}/{report.recogniser_missing_swapped}",
    ]


def _caption(record: FrameRecord | None, index: int) -> list[str]:
    if record is None:
        return [f"frame {index}"]
    first = f"frame {index}  d_src {_fmt(record.d_src)}  d_orig {_fmt(record.d_orig)}"
    jaw = "n/a"
    if record.blend_original and record.blend_swapped:
        jaw = f"{record.blend_original['jawOpen']:.2f}/{record.blend_swapped['jawOpen']:.2f}"
    third = "  ".join(_artefact(record, name) for name in _ARTEFACTS)
    return [first, f"jawOpen orig/swap {jaw}  seam {_fmt(record.seam, 2)}", third]


def _pair(sample: Sample, record: FrameRecord | None) -> Image:
    images = np.hstack(
        [sample.original, np.full((THUMB_HEIGHT, 2, 3), 255, np.uint8), sample.swapped]
    )
    caption = np.full((CAPTION_HEIGHT, images.shape[1], 3), BACKGROUND_BGR, np.uint8)
    _text(caption, _caption(record, sample.index), 4, 0)
    return np.vstack([images, caption])


def _header(report: EvalReport, identity_photo: Image, width: int) -> Image:
    header = np.full((HEADER_HEIGHT, width, 3), BACKGROUND_BGR, np.uint8)
    photo = thumbnail(identity_photo, HEADER_HEIGHT - 2 * GAP)
    photo = photo[:, : max(1, min(photo.shape[1], width // 4))]
    header[GAP : GAP + photo.shape[0], GAP : GAP + photo.shape[1]] = photo
    x = 2 * GAP + photo.shape[1]
    title = f"{Path(report.clip).name} x {Path(report.identity).name}   (original | swapped)"
    _text(header, [title, *summary_lines(report)], x, GAP)
    return header


def contact_sheet(report: EvalReport, identity_photo: Image, samples: list[Sample]) -> Image:
    """The sheet as one BGR image."""
    by_index = {r.index: r for r in report.per_frame}
    pairs = [_pair(s, by_index.get(s.index)) for s in samples]
    if pairs:
        cell_w = max(p.shape[1] for p in pairs)
        cell_h = pairs[0].shape[0]
    else:
        cell_w, cell_h = 640, 0
    rows = -(-len(pairs) // COLUMNS)
    width = max(COLUMNS * cell_w + (COLUMNS + 1) * GAP, 900)
    grid = np.full((rows * (cell_h + GAP) + GAP, width, 3), BACKGROUND_BGR, np.uint8)
    for n, pair in enumerate(pairs):
        y = GAP + (n // COLUMNS) * (cell_h + GAP)
        x = GAP + (n % COLUMNS) * (cell_w + GAP)
        grid[y : y + pair.shape[0], x : x + pair.shape[1]] = pair
    sheet: Image = np.vstack([_header(report, identity_photo, width), grid])
    return sheet
