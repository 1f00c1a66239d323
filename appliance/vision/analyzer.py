"""Face analysis of one image: detect, confirm, then 478 landmarks per face."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import cv2
import numpy as np
import numpy.typing as npt

from appliance.errors import ModelHashError, ModelMissingError
from appliance.inference.base import Backend, Threaded
from appliance.modelstore import ModelStore
from appliance.vision.blendshapes import LazyBlendshapes
from appliance.vision.detector import FaceDetector
from appliance.vision.face_pool import ALONE, CALLER, usable_cpus
from appliance.vision.hands import Hand, LazyHands
from appliance.vision.landmarks import PRESENCE_THRESHOLD, LandmarkModel
from appliance.vision.light_landmarks import LightLandmarkModel
from appliance.vision.roi import roi_from_detection, roi_from_landmarks
from appliance.vision.segmentation import LazyFaceParser
from appliance.vision.tile_scan import TileScan, merge
from appliance.vision.types import Detection, FaceLandmarks

logger = logging.getLogger(__name__)

VERIFY_CONTEXT = 2.2  # verifier crop side, in face-box sizes
VERIFY_MIN_SCORE = 0.5
LIGHT_MESH_MODEL = "face_landmarks_v1"
LIGHT_IRIS_MODEL = "iris_landmarks"
WIDE_THREADS = 4  # a lone face's landmark interpreter: at most this many threads
LandmarkChoice = Literal["auto", "full", "light"]  # settings.detector.landmarks


class FaceVerifier:
    """Confirms a candidate with a second, independent detector run on a crop around it.

    The short-range BlazeFace alone fires on some animal faces; the full-range
    model, run on the candidate's neighbourhood, does not.
    """

    def __init__(self, detector: FaceDetector) -> None:
        self.detector = detector

    def confirm(self, image: npt.NDArray[np.uint8], det: Detection) -> bool:
        x0, y0, x1, y1 = det.box
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        half = max(x1 - x0, y1 - y0) * VERIFY_CONTEXT / 2
        h, w = image.shape[:2]
        left, top = max(0, int(cx - half)), max(0, int(cy - half))
        right, bottom = min(w, int(cx + half) + 1), min(h, int(cy + half) + 1)
        if right - left < 8 or bottom - top < 8:
            return False
        for found in self.detector.detect(image[top:bottom, left:right]):
            fx = (found.box[0] + found.box[2]) / 2 + left
            fy = (found.box[1] + found.box[3]) / 2 + top
            if found.score >= VERIFY_MIN_SCORE and x0 <= fx <= x1 and y0 <= fy <= y1:
                return True
        return False


@dataclass
class FaceAnalyzer:
    detector: FaceDetector
    landmarks: LandmarkModel
    verifier: FaceVerifier | None = None
    backend: Backend | None = None  # to load a landmark model per extra worker thread
    tiles: TileScan | None = None  # small faces: the full-range model over tiles, in turn
    hands: LazyHands | None = None  # hands in identity photos (loaded on first use)
    # FaceMesh v1 and the iris model (``light_landmarks``); None: every face gets the full one
    light_models: tuple[Path, Path] | None = None
    light_always: bool = False  # every face on the light models (see ``from_store``)
    # a crowd (more faces than the face pool runs at once) on the light models, taking
    # turns: one face's landmarks a frame (each every third frame), coasting on its last
    # motion in between (the ladder's last level, from the first frame): ``auto``
    crowds: bool = False
    # the photo's expression at enrolment (``neutralise``); None: not read
    expressions: LazyBlendshapes | None = None
    # what covers the face in identity photos: hair, a hand, an object (``segmentation``)
    parser: LazyFaceParser | None = None
    _workers: dict[int, LandmarkModel] = field(default_factory=dict, repr=False)
    _lone: LandmarkModel | None = field(default=None, repr=False)  # see landmarks_on
    _light: dict[int, LightLandmarkModel] = field(default_factory=dict, repr=False)

    def landmarks_on(self, worker: int) -> LandmarkModel:
        """The landmark model of pool worker ``worker`` (see ``face_pool``).

        An interpreter runs one call at a time, so the helper thread has its own
        (loaded on first use; without a backend all share ``landmarks``). A face
        that runs alone (``ALONE``) gets an interpreter with a thread per usable
        CPU (up to ``WIDE_THREADS``) where the model can have one (LiteRT on the CPU).
        """
        if worker == ALONE:
            return self._lone_model()
        if worker == CALLER or self.backend is None:
            return self.landmarks
        model = self._workers.get(worker)
        if model is None:
            model = self._workers[worker] = LandmarkModel(
                self.backend.load(self.landmarks.model.path)
            )
        return model

    def _lone_model(self) -> LandmarkModel:
        if self._lone is None:
            threads = min(usable_cpus(), WIDE_THREADS)
            base = self.landmarks.model
            if threads < 2 or not isinstance(base, Threaded):
                self._lone = self.landmarks
            else:
                logger.debug("landmarks of a lone face on %d threads", threads)
                self._lone = LandmarkModel(base.with_threads(threads))
        return self._lone

    def light_on(self, worker: int) -> LightLandmarkModel | None:
        """The light landmark models of pool worker ``worker`` (its own interpreters, as in
        ``landmarks_on``; a lone face's with a thread per usable CPU where the models can
        have one, as the caller's otherwise), or None without them."""
        if self.light_models is None or self.backend is None:
            return None
        model = self._light.get(worker)
        if model is not None:
            return model
        if worker == ALONE:
            base = self.light_on(CALLER)
            assert base is not None
            threads = min(usable_cpus(), WIDE_THREADS)
            if threads >= 2 and isinstance(base.mesh, Threaded) and isinstance(base.iris, Threaded):
                model = LightLandmarkModel(
                    base.mesh.with_threads(threads), base.iris.with_threads(threads)
                )
            else:
                model = base
        else:
            mesh, iris = (self.backend.load(path) for path in self.light_models)
            model = LightLandmarkModel(mesh, iris)
        self._light[worker] = model
        return model

    def hands_in(self, image: npt.NDArray[np.uint8]) -> list[Hand]:
        """The hands in a photo (identity photos only); none without the hand models."""
        return [] if self.hands is None else self.hands.find(image)

    def detector_copy(self) -> FaceDetector | None:
        """The whole-frame detector on its own interpreter, for a helper thread; None
        without a backend to load one (an interpreter must not run twice at once)."""
        if self.backend is None:
            return None
        return self.detector.copy(self.backend.load(self.detector.model.path))

    def tile_detector_copy(self) -> FaceDetector | None:
        """The tile scan's detector on its own interpreter, for a helper thread; None
        without a tile scan or a backend."""
        if self.tiles is None or self.backend is None:
            return None
        detector = self.tiles.detector
        return detector.copy(self.backend.load(detector.model.path))

    @classmethod
    def from_store(
        cls,
        store: ModelStore,
        backend: Backend,
        *,
        kind: str = "short",
        min_score: float | None = None,
        max_faces: int = 4,
        verify: bool = True,
        landmarks: LandmarkChoice = "auto",
    ) -> FaceAnalyzer:
        """The analyzer of the store's models on ``backend``. ``landmarks``: ``full`` never
        uses the light landmark models, ``light`` always does, ``auto`` for small faces (and
        the degrade ladder's level), for every face when the process has one CPU (there
        the attention model cannot run on two threads, and costs three times the light
        one) and for a crowd: more faces than the face pool runs at once, whose faces
        then also take turns (``crowds``)."""
        name = "face_detector_short" if kind == "short" else "face_detector_full"
        detector = FaceDetector(backend.load(store.path(name)), kind, min_score, max_faces)
        mesh = LandmarkModel(backend.load(store.path("face_landmarks")))
        full = backend.load(store.path("face_detector_full"))
        verifier = FaceVerifier(FaceDetector(full, "full", 0.3, 4)) if verify else None
        tiles = TileScan(FaceDetector(full, "full", None, max_faces))
        hands = LazyHands(store, backend)
        light = None if landmarks == "full" else _light_models(store)
        always = light is not None and (
            landmarks == "light" or (landmarks == "auto" and usable_cpus() == 1)
        )
        crowds = light is not None and landmarks == "auto"
        analyzer = cls(detector, mesh, verifier, backend, tiles, hands, light, always, crowds)
        analyzer.expressions = LazyBlendshapes(store, backend)
        analyzer.parser = LazyFaceParser(store)
        return analyzer

    def detect(self, image: npt.NDArray[np.uint8]) -> list[Detection]:
        """Every confirmed face."""
        return [d for d in self.candidates(image) if self.confirm(image, d)]

    def candidates(self, image: npt.NDArray[np.uint8], scan: bool = False) -> list[Detection]:
        """The detector's faces, not yet confirmed (see ``confirm``); with ``scan``, also
        the small faces of the tile scan's next tiles (when there is room for more faces)."""
        found = self.detector.detect(image)
        if scan and self.tiles is not None:
            found = merge(found + self.tiles.detect_next(image))
        return found

    def confirm(self, image: npt.NDArray[np.uint8], det: Detection) -> bool:
        """Whether the verifier (if any) confirms the candidate ``det``."""
        return self.verifier is None or self.verifier.confirm(image, det)

    def landmarks_for(
        self, image: npt.NDArray[np.uint8], det: Detection, refine: bool = False
    ) -> FaceLandmarks | None:
        face = self.landmarks.run(image, roi_from_detection(det))
        if refine and face.presence >= PRESENCE_THRESHOLD:
            face = self.landmarks.run(image, roi_from_landmarks(face.points))
        return face if face.presence >= PRESENCE_THRESHOLD else None

    def analyze(self, image: npt.NDArray[np.uint8], refine: bool = False) -> list[FaceLandmarks]:
        """Every confirmed face with usable landmarks, largest first."""
        faces = [f for d in self.detect(image) if (f := self.landmarks_for(image, d, refine))]
        return sorted(faces, key=lambda f: -f.roi.size)


def _light_models(store: ModelStore) -> tuple[Path, Path] | None:
    """The light landmarks' model files, or None (said once) when the store lacks them."""
    try:
        return store.path(LIGHT_MESH_MODEL), store.path(LIGHT_IRIS_MODEL)
    except (ModelMissingError, ModelHashError) as exc:
        logger.warning("small faces get the full landmark model (slower): %s", exc)
        return None


def decode_image(data: bytes) -> npt.NDArray[np.uint8] | None:
    """Decode encoded image bytes to BGR, or None when they are not an image."""
    buf = np.frombuffer(data, np.uint8)
    if buf.size == 0:
        return None
    raw = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    if raw is None or not raw.size:
        return None
    image: npt.NDArray[np.uint8] = np.asarray(raw, np.uint8)
    return image
