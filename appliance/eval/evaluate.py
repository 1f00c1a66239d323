"""Run our swap over a clip and measure it (``evaluate``).

The swap runs on every frame (the tracker needs continuity). On each frame we
keep the original and swapped image, the visitor's landmarks as the tracker
followed them, and the blendshapes our landmarker reads from both images in the
same crop. Every ``every``-th frame the independent recogniser also describes
the original and the swapped face. A frame without a face is counted and
recorded, never an error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from appliance.config import Settings
from appliance.eval import artefacts, metrics, seams
from appliance.eval.clips import Clip, Frames
from appliance.eval.contact_sheet import SampleKeeper
from appliance.eval.coverage import coverage
from appliance.eval.drawn import DrawnMesh
from appliance.eval.recogniser import Descriptor, FaceRecogniser
from appliance.eval.regions import band_px, crop_box, face_crops, face_mask
from appliance.eval.report import (
    EXPRESSION_BLENDSHAPES,
    EvalReport,
    FrameRecord,
    frame_amplitude,
    summarise,
)
from appliance.inference.litert import LiteRTBackend
from appliance.media.frames import Frame, Image
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_analyzer, build_processor, resolve_photo
from appliance.pipeline.processor import FrameProcessor
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.blendshapes import BlendshapeModel
from appliance.vision.identity import Identity, read_image
from appliance.vision.label import Labeler
from appliance.vision.landmarks import PRESENCE_THRESHOLD
from appliance.vision.roi import roi_from_landmarks
from appliance.vision.types import FaceLandmarks, FloatArray

logger = logging.getLogger(__name__)

DEFAULT_EVERY = 3
DEFAULT_MAX_FRAMES = 300
Progress = Callable[[int], None]


@dataclass
class Models:
    """What evaluation loads once and shares between clips and identities."""

    analyzer: FaceAnalyzer
    blendshapes: BlendshapeModel
    recogniser: FaceRecogniser | None  # None: no identity figures (d_src, d_orig, moved)

    @classmethod
    def load(
        cls,
        settings: Settings,
        store: ModelStore,
        recogniser: FaceRecogniser | None = None,
        *,
        recognise: bool = True,
    ) -> Models:
        """``recognise=False``: without the recogniser (and the ``eval`` extra): every
        figure but the identity distances."""
        if recognise:
            recogniser = recogniser or FaceRecogniser()  # first: a missing extra fails fast
        backend = LiteRTBackend()
        blendshapes = BlendshapeModel(backend.load(store.path("face_blendshapes")))
        return cls(build_analyzer(settings, store, backend), blendshapes, recogniser)


@dataclass
class EvalResult:
    report: EvalReport
    keeper: SampleKeeper
    identity_photo: Image


@dataclass
class _Previous:
    original: Image
    swapped: Image
    mask: Image


class _ClipMeter:
    """Measures one frame at a time; keeps the previous frame for the stability figure."""

    def __init__(
        self,
        models: Models,
        identity: Descriptor | None,
        every: int,
        enrolled: Identity | None = None,
        label: Labeler | None = None,
    ) -> None:
        self.models = models
        self.identity = identity
        self.enrolled = enrolled
        self.label = label  # its box is left out of the artefact figures
        self.every = every
        self.keeper = SampleKeeper()
        self.previous: _Previous | None = None
        # the mesh edges round the part of the identity's texture that was filled
        self.fill_edges = seams.fill_edges(enrolled) if enrolled is not None else None

    def measure(
        self,
        index: int,
        original: Image,
        frame: Frame,
        face: FaceLandmarks | None,
        drawn: FloatArray | None = None,
    ) -> FrameRecord:
        """``drawn``: the mesh the swap drew the identity onto (the visitor's landmarks
        when None)."""
        record = FrameRecord(index=index, face=face is not None, swapped=frame.swapped)
        if face is None:
            self.previous = None
            return record
        swapped = frame.image
        mask = face_mask(original.shape, face.points)
        self._blendshapes(record, original, swapped, face)
        self._stability(record, original, swapped, mask)
        self._seams(record, original, swapped, face)
        self._artefacts(record, original, swapped, face, drawn=drawn)
        self._fill_step(record, original, swapped, face, drawn)
        if index % self.every == 0:
            if self.models.recogniser is not None:
                self._identity(record, original, swapped, face, self.models.recogniser)
            self.keeper.offer(index, original, swapped, crop_box(face.points, 0, original.shape))
        return record

    def _fill_step(
        self,
        record: FrameRecord,
        original: Image,
        swapped: Image,
        face: FaceLandmarks,
        drawn: FloatArray | None,
    ) -> None:
        edges = self.fill_edges if self.fill_edges is not None else seams.NO_EDGES
        label = self.label.region(original.shape) if self.label is not None else None
        mesh = face.points if drawn is None else drawn
        step = seams.fill_step(original, swapped, mesh, edges, visitor=face.points, exclude=label)
        record.fill_step = step.figure
        record.fill_step_midline = step.midline
        record.fill_step_edge = step.edge

    def _blendshapes(
        self, record: FrameRecord, original: Image, swapped: Image, face: FaceLandmarks
    ) -> None:
        roi = roi_from_landmarks(face.points)
        scores = []
        points = []
        for image in (original, swapped):
            found = self.models.analyzer.landmarks.run(image, roi)
            if found.presence < PRESENCE_THRESHOLD:
                return
            all_scores = self.models.blendshapes.run(found.points)
            scores.append({name: all_scores[name] for name in EXPRESSION_BLENDSHAPES})
            points.append(found.points)
        record.blend_original, record.blend_swapped = scores
        worst = frame_amplitude(scores[0], scores[1])
        if worst is not None:
            record.amplitude, record.amplitude_blendshape = worst
        record.gaze_error = artefacts.gaze_error(points[0], points[1])

    def _artefacts(
        self,
        record: FrameRecord,
        original: Image,
        swapped: Image,
        face: FaceLandmarks,
        *,
        drawn: FloatArray | None,
    ) -> None:
        if self.enrolled is not None:
            mesh = face.points if drawn is None else drawn
            record.stretch = artefacts.texture_stretch(self.enrolled, mesh)
            record.coverage = coverage(self.enrolled, mesh)
        # the label's letters are not the face's detail
        label = None if self.label is None else self.label.region(original.shape)
        a, b, local, face_px = face_crops(original, swapped, face.points, label)
        record.shading = artefacts.shading_mismatch(a, b, local, face_px)
        record.detail_ratio = artefacts.detail_ratio(a, b, local)

    def _stability(self, record: FrameRecord, original: Image, swapped: Image, mask: Image) -> None:
        prev = self.previous
        self.previous = _Previous(original, swapped, mask)
        if prev is None or prev.original.shape != original.shape:
            return
        region = np.maximum(mask, prev.mask)
        record.change_original = metrics.region_change(prev.original, original, region)
        record.change_swapped = metrics.region_change(prev.swapped, swapped, region)

    def _seams(
        self, record: FrameRecord, original: Image, swapped: Image, face: FaceLandmarks
    ) -> None:
        band = band_px(face.points)
        margin = (metrics.SEAM_RING[1] + 1) * band
        x0, y0, x1, y1 = crop_box(face.points, margin, original.shape)
        local = face.points.copy()
        local[:, :2] -= (x0, y0)
        mask = face_mask((y1 - y0, x1 - x0), local)
        record.seam = metrics.seam_energy(swapped[y0:y1, x0:x1], mask, band)
        record.seam_original = metrics.seam_energy(original[y0:y1, x0:x1], mask, band)

    def _identity(
        self,
        record: FrameRecord,
        original: Image,
        swapped: Image,
        face: FaceLandmarks,
        recogniser: FaceRecogniser,
    ) -> None:
        near = face.box()
        d_original = recogniser.descriptor(original, near)
        d_swapped = recogniser.descriptor(swapped, near)
        record.recognised_original = d_original is not None
        record.recognised_swapped = d_swapped is not None
        if d_swapped is not None and d_original is not None:
            record.d_orig = metrics.distance(d_swapped, d_original)
        if self.identity is None:
            return
        if d_swapped is not None:
            record.d_src = metrics.distance(d_swapped, self.identity)
        if d_original is not None:
            record.d_src_unswapped = metrics.distance(d_original, self.identity)


def _visitor(processor: FrameProcessor) -> FaceLandmarks | None:
    tracks = processor.tracks
    return tracks[0].landmarks if tracks else None


def evaluate(
    identity: str,
    clip: Frames,
    settings: Settings,
    store: ModelStore,
    *,
    models: Models | None = None,
    every: int = DEFAULT_EVERY,
    max_frames: int = DEFAULT_MAX_FRAMES,
    progress: Progress | None = None,
) -> EvalResult:
    """Swap ``identity`` (asset name or photo path) onto ``clip`` and measure the swap.

    ``models`` (loaded once, shared between calls) are loaded here when not given.
    """
    if every < 1 or max_frames < 1:
        raise ValueError("every and max_frames must be at least 1")
    start = time.monotonic()
    models = models or Models.load(settings, store)
    photo_path = resolve_photo(identity, store)
    photo = read_image(photo_path)
    processor = build_processor(settings, store, identity, analyzer=models.analyzer, max_faces=1)
    reference = None if models.recogniser is None else models.recogniser.descriptor(photo)
    if reference is None and models.recogniser is not None:
        logger.warning("%s: the recogniser finds no face in the identity photo", photo_path)
    meter = _ClipMeter(models, reference, every, processor.identity, processor.labeler)
    drawn = DrawnMesh(processor.swapper)
    records: list[FrameRecord] = []
    for index, image in enumerate(clip.images()):
        if index >= max_frames:
            break
        frame = Frame(image=image.copy(), index=index, capture_ns=round(index * 1e9 / clip.fps))
        processor.process(frame)
        records.append(meter.measure(index, image, frame, _visitor(processor), drawn.take()))
        if progress is not None:
            progress(index + 1)
    report = summarise(
        records,
        clip=str(clip.path),
        identity=str(photo_path),
        identity_recognised=reference is not None,
        every=every,
        max_frames=max_frames,
    )
    report.elapsed_s = time.monotonic() - start
    return EvalResult(report, meter.keeper, photo)


def planned_frames(clip: Clip, max_frames: int) -> int | None:
    """How many frames ``evaluate`` will process, when the clip's length is known."""
    return None if clip.frame_count is None else min(clip.frame_count, max_frames)


def output_stem(clip: Clip, identity_photo: Path) -> str:
    """``<clip>__<identity>``: the name of a pair's report and contact sheet."""
    return f"{clip.name}__{identity_photo.stem}"
