"""Enrolling an uploaded photo (exactly one usable face) and previewing it on the demo faces.

The enroller has its own analyzer and its own small processor (geometric
swapper, the current label), so an upload never touches the live pipeline's
models; a lock makes uploads take turns. ``check`` assesses an upload (see
``identity_check``): what cannot work is refused, the rest gives hints for
staff. The preview shows the identity on both embedded photos (the astronaut
and Grace Hopper) side by side.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

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
from appliance.vision.identity_check import NO_FACE, SEVERAL_FACES, Assessment, IdentityChecker
from appliance.vision.label import Labeler
from appliance.vision.swap_geometric import GeometricSwapper

logger = logging.getLogger(__name__)

DEMO_FACE_ASSETS = ("astronaut", "grace_hopper")
PREVIEW_HEIGHT = 360  # each demo face in the preview, in pixels
PREVIEW_GAP = 8
PREVIEW_JPEG_QUALITY = 85


class Enroller:
    """Turns a checked photo into an ``Identity`` and renders its preview."""

    def __init__(
        self,
        analyzer: FaceAnalyzer,
        previewer: FrameProcessor,
        demo_faces: Sequence[Image],
        checker: IdentityChecker,
    ) -> None:
        self.analyzer = analyzer
        self.previewer = previewer
        self.demo_faces = tuple(demo_faces)
        self.checker = checker
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
        demo_faces = [read_image(store.path(name)) for name in DEMO_FACE_ASSETS]
        return cls(analyzer, previewer, demo_faces, IdentityChecker.for_analyzer(analyzer, store))

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

    def preview_jpeg(self, identity: Identity) -> bytes:
        """``identity`` swapped onto each demo face, labelled, side by side, as a JPEG."""
        shown = []
        with self._lock:
            self.previewer.identity = identity
            for face in self.demo_faces:
                self.previewer.reset()
                frame = self.previewer.process(Frame(face.copy(), 0, 0))
                if not frame.swapped:
                    logger.warning("preview of %s: a demo face was not swapped", identity.name)
                shown.append(_to_height(frame.image, PREVIEW_HEIGHT))
            self.previewer.identity = None
        gap = np.full((PREVIEW_HEIGHT, PREVIEW_GAP, 3), 255, np.uint8)
        parts = [part for image in shown for part in (gap, image)][1:]
        return encode_jpeg(np.hstack(parts), PREVIEW_JPEG_QUALITY)

    def configure(self, settings: Settings) -> None:
        """Use ``settings``' label and swap look for the next previews."""
        with self._lock:
            labeler = self.previewer.labeler
            self.previewer.labeler = Labeler(settings.label, labeler.font_path)
            self.previewer.swapper.settings = settings.swap
            self.previewer.shaper.strength = settings.swap.shape_transfer


def _to_height(image: Image, height: int) -> Image:
    scale = height / image.shape[0]
    width = max(1, round(image.shape[1] * scale))
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    return np.asarray(cv2.resize(image, (width, height), interpolation=interp), np.uint8)
