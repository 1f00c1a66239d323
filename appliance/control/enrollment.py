"""Enrolling an uploaded photo (exactly one usable face) and previewing it on the demo faces.

The enroller has its own analyzer and its own small processor (geometric
swapper, the current label), so an upload never touches the live pipeline's
models; a lock makes uploads take turns. ``check`` assesses an upload (see
``identity_check``): what cannot work is refused, the rest gives hints for
staff. The preview shows the identity on both embedded photos (the astronaut
and Grace Hopper), each frontal and redrawn with the head turned both ways
(``turned_view``: a turned visitor is where a photo's seams show), one row per
photo. A ``PreviewGrader`` given from above (``appliance.eval.photo_grade``:
control cannot import the eval layer) renders those previews itself and grades
what they show: its finding (``result``) refuses the upload or warns beside
the previews.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import cv2
import numpy as np

from appliance.config import Settings
from appliance.control.uploads import encode_jpeg
from appliance.errors import NoFaceError, UploadError
from appliance.media.frames import Frame, Image
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_analyzer
from appliance.pipeline.processor import FrameProcessor
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.identity import Identity, enroll, read_image
from appliance.vision.identity_check import (
    NO_FACE,
    SEVERAL_FACES,
    Assessment,
    Finding,
    IdentityChecker,
)
from appliance.vision.label import Labeler
from appliance.vision.swap_geometric import GeometricSwapper
from appliance.vision.turned_view import turned_view

logger = logging.getLogger(__name__)

DEMO_FACE_ASSETS = ("astronaut", "grace_hopper")
# each demo face frontal, then redrawn turned both ways (degrees asked of ``turned_view``;
# the landmarker then measures the astronaut at -12/+11°, Grace Hopper at -13/+12°)
TURNS = (0.0, -30.0, 30.0)
PREVIEW_HEIGHT = 360  # each demo face in the preview, in pixels
PREVIEW_GAP = 8
PREVIEW_JPEG_QUALITY = 85


@dataclass(frozen=True)
class DemoView:
    """A demo face as the previews show it: frontal (``turn`` 0) or redrawn turned."""

    photo: str  # the demo photo's asset name
    image: Image
    turn: float = 0.0  # the yaw asked of ``turned_view``, degrees

    @property
    def frontal(self) -> bool:
        return self.turn == 0.0

    @property
    def name(self) -> str:
        return self.photo if self.frontal else f"{self.photo} turned {self.turn:+.0f}°"


@dataclass(frozen=True)
class Graded:
    """A grader's finding on an identity and the renders it judged (one per view)."""

    finding: Finding
    images: tuple[Image, ...]
    measures: dict[str, float] = field(default_factory=dict)


class PreviewGrader(Protocol):
    """Renders an identity onto the demo views and grades what the renders show."""

    def grade(self, identity: Identity) -> Graded: ...


@dataclass(frozen=True)
class Preview:
    """The previews as one JPEG, and the grader's finding (None without a grader)."""

    jpeg: bytes
    graded: Graded | None = None


def demo_views(
    faces: Sequence[tuple[str, Image]], analyzer: FaceAnalyzer, turns: Sequence[float] = TURNS
) -> list[DemoView]:
    """Each of ``faces`` (name, photo) frontal and turned by each of ``turns``."""
    views = []
    for name, image in faces:
        found = analyzer.analyze(image, refine=True)
        for turn in turns:
            if turn == 0.0:
                views.append(DemoView(name, image))
            elif not found:
                logger.warning("demo face %s: no face found, no turned preview", name)
            else:
                turned = turned_view(image, found[0].points, turn)
                views.append(DemoView(name, turned, turn))
    return views


class Enroller:
    """Turns a checked photo into an ``Identity`` and renders its preview."""

    def __init__(
        self,
        analyzer: FaceAnalyzer,
        previewer: FrameProcessor,
        views: Sequence[DemoView],
        checker: IdentityChecker,
        grader: PreviewGrader | None = None,
    ) -> None:
        self.analyzer = analyzer
        self.previewer = previewer
        self.views = tuple(views)
        self.checker = checker
        self.grader = grader  # set from above (it renders with ``previewer`` and ``views``)
        self._lock = threading.Lock()

    @classmethod
    def from_store(cls, settings: Settings, store: ModelStore) -> Enroller:
        analyzer = build_analyzer(settings, store)
        previewer = FrameProcessor(
            analyzer,
            GeometricSwapper(settings.swap),
            Labeler(settings.label, store.path("label_font")),
            None,
            max_faces=1,
        )
        faces = [(name, read_image(store.path(name))) for name in DEMO_FACE_ASSETS]
        views = demo_views(faces, analyzer)
        return cls(analyzer, previewer, views, IdentityChecker.for_analyzer(analyzer, store))

    def check(self, image: Image) -> Assessment:
        """The assessment of ``image``; ``UploadError`` with the reasons when it is refused."""
        with self._lock:
            assessment = self.checker.assess(image)
        if assessment.refused:
            raise UploadError("; ".join(assessment.reasons()))
        return assessment

    def enroll(self, image: Image, name: str) -> Identity:
        """The identity in ``image``; ``UploadError`` unless it shows exactly one usable face."""
        with self._lock:
            count = len(self.analyzer.analyze(image))
            if count == 0:
                raise UploadError(NO_FACE)
            if count > 1:
                raise UploadError(SEVERAL_FACES.format(count=count))
            try:
                return enroll(image, self.analyzer, name)
            except NoFaceError as exc:
                raise UploadError(str(exc).split(": ", 1)[-1]) from exc

    def enroll_file(self, path: Path, name: str) -> Identity:
        return self.enroll(read_image(path), name)

    def preview(self, identity: Identity) -> Preview:
        """``identity`` on every demo view, labelled, one row per demo photo, as a JPEG;
        graded by the grader when there is one."""
        with self._lock:
            if self.grader is not None:
                graded = self.grader.grade(identity)
                return Preview(preview_sheet(self.views, graded.images), graded)
            shown = self.render(identity)
        return Preview(preview_sheet(self.views, shown))

    def preview_jpeg(self, identity: Identity) -> bytes:
        return self.preview(identity).jpeg

    def render(self, identity: Identity) -> list[Image]:
        """``identity`` swapped onto each demo view (call with the lock held, or alone)."""
        shown = []
        self.previewer.identity = identity
        try:
            for view in self.views:
                self.previewer.reset()
                frame = self.previewer.process(Frame(view.image.copy(), 0, 0))
                if not frame.swapped:
                    logger.warning("preview of %s: %s was not swapped", identity.name, view.name)
                shown.append(frame.image)
        finally:
            self.previewer.identity = None
        return shown

    def configure(self, settings: Settings) -> None:
        """Use ``settings``' label and swap look for the next previews."""
        with self._lock:
            labeler = self.previewer.labeler
            self.previewer.labeler = Labeler(settings.label, labeler.font_path)
            self.previewer.swapper.settings = settings.swap
            self.previewer.shaper.strength = settings.swap.shape_transfer


def preview_sheet(views: Sequence[DemoView], images: Sequence[Image]) -> bytes:
    """``images`` (one per view) as a JPEG: one row per demo photo (its frontal view
    first), each image ``PREVIEW_HEIGHT`` high, rows padded white to the widest."""
    rows: dict[str, list[Image]] = {}
    for view, image in zip(views, images, strict=True):
        rows.setdefault(view.photo, []).append(_to_height(image, PREVIEW_HEIGHT))
    gap = np.full((PREVIEW_HEIGHT, PREVIEW_GAP, 3), 255, np.uint8)
    lines = [
        np.hstack([part for image in row for part in (gap, image)][1:]) for row in rows.values()
    ]
    width = max(line.shape[1] for line in lines)
    padded = [
        np.pad(line, ((0, 0), (0, width - line.shape[1]), (0, 0)), constant_values=255)
        for line in lines
    ]
    between = np.full((PREVIEW_GAP, width, 3), 255, np.uint8)
    sheet = np.vstack([part for line in padded for part in (between, line)][1:])
    return encode_jpeg(sheet, PREVIEW_JPEG_QUALITY)


def _to_height(image: Image, height: int) -> Image:
    scale = height / image.shape[0]
    width = max(1, round(image.shape[1] * scale))
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    return np.asarray(cv2.resize(image, (width, height), interpolation=interp), np.uint8)
