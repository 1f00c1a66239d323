"""A contact sheet a person can look at: original | swapped pairs of sampled frames,
each with its own figures, under a header with the identity photo and the clip's figures.

Frames are kept while the clip plays by :class:`SampleKeeper`, which holds a
bounded, evenly spread set of small copies whatever the clip's length. Where
the face is small in the frame (under ``ZOOM_BELOW`` of its height: a
half-body shot's 60-80 px face in a 1364-line frame), the pair also shows the
face zoomed: a square ``ZOOM_MARGIN`` times the face oval's box, scaled to the
thumbnail height (``THUMB_HEIGHT`` pixels a side, so memory stays bounded).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from appliance.eval import artefacts
from appliance.eval.report import HIGH_SCORE, EvalReport, FrameRecord
from appliance.media.frames import Image

logger = logging.getLogger(__name__)

SAMPLES = 6
COLUMNS = 2  # pairs per row
THUMB_HEIGHT = 240
CAPTION_HEIGHT = 84
ZOOM_BELOW = 0.4  # a face box under this share of the frame height is also shown zoomed
ZOOM_MARGIN = 1.6  # the zoomed square: this times the face box's larger side
MIN_CELL_WIDTH = 460  # a pair at least this wide, so its caption fits
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


Box = tuple[int, int, int, int]  # x0, y0, x1, y1, ends exclusive


def zoom_crop(image: Image, box: Box, side: int = THUMB_HEIGHT) -> Image:
    """A ``side`` x ``side`` picture of the square ``ZOOM_MARGIN`` times ``box``'s larger
    side around its centre (the frame's edge repeated where the square leaves it)."""
    x0, y0, x1, y1 = box
    half = max(1.0, ZOOM_MARGIN * max(x1 - x0, y1 - y0) / 2.0)
    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    scale = side / (2.0 * half)
    # the affine map from the frame to the zoomed square
    matrix = np.array(
        [[scale, 0.0, side / 2.0 - cx * scale], [0.0, scale, side / 2.0 - cy * scale]]
    )
    interpolation = cv2.INTER_CUBIC if scale > 1.0 else cv2.INTER_AREA
    out = cv2.warpAffine(
        image, matrix, (side, side), flags=interpolation, borderMode=cv2.BORDER_REPLICATE
    )
    return np.asarray(out, np.uint8)


def small_face(box: Box | None, shape: tuple[int, ...]) -> bool:
    """Whether a face in ``box`` is small enough in a frame of ``shape`` to be zoomed."""
    return box is not None and (box[3] - box[1]) < ZOOM_BELOW * shape[0]


@dataclass(frozen=True)
class Sample:
    index: int
    original: Image
    swapped: Image
    zoom_original: Image | None = None  # the face zoomed, where it is small in the frame
    zoom_swapped: Image | None = None


class SampleKeeper:
    """Keeps every ``stride``-th offered frame, doubling the stride when full."""

    def __init__(self, count: int = SAMPLES) -> None:
        self.count = count
        self.stride = 1
        self._offered = 0
        self.samples: list[Sample] = []

    def offer(self, index: int, original: Image, swapped: Image, face: Box | None = None) -> None:
        """Keep (maybe) a small copy of this pair; ``face``: the face's box in the frame."""
        turn, self._offered = self._offered, self._offered + 1
        if turn % self.stride:
            return
        zooms: tuple[Image | None, Image | None] = (None, None)
        if face is not None and small_face(face, original.shape):
            zooms = (zoom_crop(original, face), zoom_crop(swapped, face))
        self.samples.append(Sample(index, thumbnail(original), thumbnail(swapped), *zooms))
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


_ARTEFACTS = ("stretch", "gaze_error", "shading", "detail_ratio", "fill_step")
_SHORT = {
    "stretch": "stretch",
    "gaze_error": "gaze",
    "shading": "shade",
    "detail_ratio": "detail",
    "fill_step": "fill",
    "amplitude": "amp",
}


def _artefact(record: EvalReport | FrameRecord, name: str) -> str:
    """``name value`` and, when outside its threshold, ``(!)``."""
    value = getattr(record, name)
    flag = "" if artefacts.within(name, value) is not False else "(!)"
    return f"{_SHORT[name]} {_fmt(value, 2)}{flag}"


def amplitude_text(record: EvalReport | FrameRecord) -> str:
    """``amp 0.12 jawOpen`` (the worst blendshape), ``(!)`` when over its threshold."""
    name = record.amplitude_blendshape
    return _artefact(record, "amplitude") + ("" if name is None else f" {name}")


def _made(report: EvalReport) -> str:
    """The worst blendshape's mean swap - orig on the frames the visitor made it on."""
    name = report.amplitude_blendshape
    made = None if name is None else report.expression_high.get(name)
    if made is None:
        return ""
    return f"  (swap - orig {made:+.2f} where orig > {HIGH_SCORE})"


def summary_lines(report: EvalReport) -> list[str]:
    """The clip's figures as short lines of ASCII text."""
    return [
        f"identity  d_src {_fmt(report.d_src)}  d_orig {_fmt(report.d_orig)}  "
        f"moved {_fmt(report.moved, 2)}  (unswapped d_src {_fmt(report.d_src_unswapped)}, "
        f"{report.recogniser_pairs} frames)",
        f"expression r {_fmt(report.expression_mean)}  stability {_fmt(report.stability)}  "
        f"seam {_fmt(report.seam)} (original {_fmt(report.seam_original)})",
        "artefacts  " + "  ".join(_artefact(report, name) for name in _ARTEFACTS),
        f"expression amplitude  {amplitude_text(report)}{_made(report)}",
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
    third = "  ".join(_artefact(record, name) for name in _ARTEFACTS[:3])
    fourth = "  ".join(_artefact(record, name) for name in _ARTEFACTS[3:])
    return [
        first,
        f"jawOpen orig/swap {jaw}  seam {_fmt(record.seam, 2)}",
        third,
        f"{fourth}  {amplitude_text(record)}",
    ]


def _pair(sample: Sample, record: FrameRecord | None) -> Image:
    line = np.full((THUMB_HEIGHT, 2, 3), 255, np.uint8)
    parts = [sample.original, line, sample.swapped]
    if sample.zoom_original is not None and sample.zoom_swapped is not None:
        gap = np.full((THUMB_HEIGHT, GAP, 3), BACKGROUND_BGR, np.uint8)
        parts += [gap, sample.zoom_original, line, sample.zoom_swapped]
    images = np.hstack(parts)
    if images.shape[1] < MIN_CELL_WIDTH:
        pad = np.full((THUMB_HEIGHT, MIN_CELL_WIDTH - images.shape[1], 3), BACKGROUND_BGR, np.uint8)
        images = np.hstack([images, pad])
    caption = np.full((CAPTION_HEIGHT, images.shape[1], 3), BACKGROUND_BGR, np.uint8)
    _text(caption, _caption(record, sample.index), 4, 0)
    return np.vstack([images, caption])


def _header(report: EvalReport, identity_photo: Image, width: int) -> Image:
    header = np.full((HEADER_HEIGHT, width, 3), BACKGROUND_BGR, np.uint8)
    photo = thumbnail(identity_photo, HEADER_HEIGHT - 2 * GAP)
    photo = photo[:, : max(1, min(photo.shape[1], width // 4))]
    header[GAP : GAP + photo.shape[0], GAP : GAP + photo.shape[1]] = photo
    x = 2 * GAP + photo.shape[1]
    title = f"{Path(report.clip).name} x {Path(report.identity).name}   (original | swapped"
    title += ", and the face zoomed where small)"
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
