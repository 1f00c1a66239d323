"""Enrolling an uploaded photo (exactly one usable face) and previewing it on the demo face.

The enroller has its own analyzer and its own small processor (geometric
swapper, the current label), so an upload never touches the live pipeline's
models; a lock makes uploads take turns.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from appliance.config import Settings
from appliance.control.uploads import encode_jpeg
from appliance.errors import NoFaceError, UploadError
from appliance.media.frames import Frame, Image
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_analyzer
from appliance.pipeline.processor import FrameProcessor
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.identity import Identity, enroll, read_image
from appliance.vision.label import Labeler
from appliance.vision.swap_geometric import GeometricSwapper

logger = logging.getLogger(__name__)

DEMO_FACE_ASSET = "astronaut"
PREVIEW_JPEG_QUALITY = 85
NO_FACE = "no face found in the photo: use a clear, well-lit, frontal photo of one person"
TWO_FACES = "more than one face ({count}) in the photo: use a photo of one person"


class Enroller:
    """Turns a checked photo into an ``Identity`` and renders its preview."""

    def __init__(self, analyzer: FaceAnalyzer, previewer: FrameProcessor, demo_face: Image) -> None:
        self.analyzer = analyzer
        self.previewer = previewer
        self.demo_face = demo_face
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
        return cls(analyzer, previewer, read_image(store.path(DEMO_FACE_ASSET)))

    def enroll(self, image: Image, name: str) -> Identity:
        """The identity in ``image``; ``UploadError`` unless it shows exactly one usable face."""
        with self._lock:
            count = len(self.analyzer.analyze(image))
            if count == 0:
                raise UploadError(NO_FACE)
            if count > 1:
                raise UploadError(TWO_FACES.format(count=count))
            try:
                return enroll(image, self.analyzer, name)
            except NoFaceError as exc:
                raise UploadError(str(exc).split(": ", 1)[-1]) from exc

    def enroll_file(self, path: Path, name: str) -> Identity:
        return self.enroll(read_image(path), name)

    def preview_jpeg(self, identity: Identity) -> bytes:
        """``identity`` swapped onto the demo face, labelled, as a JPEG."""
        with self._lock:
            self.previewer.identity = identity
            self.previewer.reset()
            frame = self.previewer.process(Frame(self.demo_face.copy(), 0, 0))
            self.previewer.identity = None
        if not frame.swapped:
            logger.warning("preview of %s: the demo face was not swapped", identity.name)
        return encode_jpeg(frame.image, PREVIEW_JPEG_QUALITY)

    def configure(self, settings: Settings) -> None:
        """Use ``settings``' label and swap look for the next previews."""
        with self._lock:
            labeler = self.previewer.labeler
            self.previewer.labeler = Labeler(settings.label, labeler.font_path)
            self.previewer.swapper.settings = settings.swap
            self.previewer.shaper.strength = settings.swap.shape_transfer
