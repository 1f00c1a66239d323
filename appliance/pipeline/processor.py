"""One frame's way through analysis, swap and label, with per-stage timings.

This is the synchronous core; the threaded runner calls the same ``process``.
Faces are followed from frame to frame by their landmarks and re-detected
every ``redetect_every`` frames or when a face is lost.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from appliance.pipeline.frames import Frame, Image
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.identity import Identity
from appliance.vision.label import Labeler
from appliance.vision.landmarks import PRESENCE_THRESHOLD
from appliance.vision.roi import roi_from_detection, roi_from_landmarks
from appliance.vision.swap_geometric import GeometricSwapper
from appliance.vision.types import FaceLandmarks, Roi

logger = logging.getLogger(__name__)


def _add(timings: dict[str, float], stage: str, start: float) -> float:
    now = time.perf_counter()
    timings[stage] = timings.get(stage, 0.0) + (now - start) * 1e3
    return now


@dataclass
class FrameProcessor:
    analyzer: FaceAnalyzer
    swapper: GeometricSwapper
    labeler: Labeler
    identity: Identity | None
    max_faces: int = 1
    redetect_every: int = 5
    _rois: list[Roi] = field(default_factory=list)
    _since_detect: int = 0

    def process(self, frame: Frame) -> Frame:
        timings = frame.timings_ms
        faces = self.find_faces(frame.image, timings)
        frame.faces = len(faces)
        swapped = False
        if self.identity is not None:
            for face in faces:
                swapped |= self.swapper.swap(frame.image, face, self.identity, timings)
        frame.swapped = swapped
        if swapped:
            start = time.perf_counter()
            self.labeler.apply(frame.image)
            _add(timings, "label", start)
        return frame

    def find_faces(self, image: Image, timings: dict[str, float]) -> list[FaceLandmarks]:
        start = time.perf_counter()
        faces = (
            self._follow(image) if self._rois and self._since_detect < self.redetect_every else []
        )
        start = _add(timings, "landmarks", start) if faces else start
        if not faces:
            detections = self.analyzer.detect(image)[: self.max_faces]
            start = _add(timings, "detect", start)
            rois = [roi_from_detection(d) for d in detections]
            faces = [
                f
                for r in rois
                if (f := self.analyzer.landmarks.run(image, r)).presence >= PRESENCE_THRESHOLD
            ]
            _add(timings, "landmarks", start)
            self._since_detect = 0
        self._since_detect += 1
        self._rois = [roi_from_landmarks(f.points) for f in faces]
        return faces

    def _follow(self, image: Image) -> list[FaceLandmarks]:
        faces = [self.analyzer.landmarks.run(image, roi) for roi in self._rois]
        if any(f.presence < PRESENCE_THRESHOLD for f in faces):
            return []
        return faces

    def reset(self) -> None:
        self._rois = []
        self._since_detect = 0
