"""One frame's way through analysis, swap and label, with per-stage timings.

This is the synchronous core; the threaded runner calls the same ``process``.
Faces are followed from frame to frame by a ``Tracker`` (stable ids, One Euro
smoothed landmarks) that re-detects every ``redetect_every`` frames or when a
face is lost.

``set_quality`` applies a step of the degrade ladder between frames: the
blend, the detection interval, and a processing height. Above that height a
frame is analysed and swapped at the lower resolution and, when something was
swapped, scaled back to its own size before the label is drawn (a frame
without a swap keeps its full resolution).

``liveness`` (the settings of a live camera) gates the swap: a face is
swapped only once its track is LIVE, and until then the frame shows it as it
is, with the prompt (``liveness_stage``). None (files, stills, the demo
photo: not a visitor in front of the camera) swaps every face.
"""

from __future__ import annotations

import logging
import time

import cv2

from appliance.config import LivenessSettings
from appliance.media.frames import Frame, Image
from appliance.pipeline.liveness_stage import LivenessStage
from appliance.pipeline.quality import QualityLevel
from appliance.timing import add_stage_ms
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.face_pool import ALONE, CALLER, FacePool
from appliance.vision.identity import Identity
from appliance.vision.label import Labeler
from appliance.vision.one_euro import OneEuroParams
from appliance.vision.reliability import swap_weight, yaw_degrees
from appliance.vision.shape_transfer import ShapeTransfer, head_pose
from appliance.vision.swap_geometric import GeometricSwapper
from appliance.vision.tracker import Policy, Track, Tracker
from appliance.vision.types import FaceLandmarks

logger = logging.getLogger(__name__)


def _policy(max_faces: int) -> Policy:
    return "largest" if max_faces <= 1 else "all"


class FrameProcessor:
    """Finds and follows faces, swaps them for the identity and labels the frame."""

    def __init__(
        self,
        analyzer: FaceAnalyzer,
        swapper: GeometricSwapper,
        labeler: Labeler,
        identity: Identity | None,
        *,
        max_faces: int = 1,
        redetect_every: int = 5,
        smoothing: OneEuroParams | None = None,
        liveness: LivenessSettings | None = None,
    ) -> None:
        self.analyzer = analyzer
        self.swapper = swapper
        self.labeler = labeler
        self.identity = identity
        self.pool = FacePool()
        # loaded now, not on the first (small) face's frame
        if self.pool.parallel:
            analyzer.landmarks_on(ALONE)
            analyzer.light_on(ALONE)
        analyzer.light_on(CALLER)
        self.tracker = Tracker(
            analyzer,
            pool=self.pool,
            detect_every=redetect_every,
            policy=_policy(max_faces),
            max_faces=max_faces,
            smoothing=smoothing,
        )
        self.max_height: int | None = None  # process frames taller than this scaled down
        self.shaper = ShapeTransfer(swapper.settings.shape_transfer)
        self.liveness = LivenessStage(liveness, labeler)
        self.tracker.watching = self.liveness.watching  # faces not yet LIVE: full landmarks

    @property
    def max_faces(self) -> int:
        return self.tracker.max_faces

    @max_faces.setter
    def max_faces(self, value: int) -> None:
        self.tracker.max_faces = value
        self.tracker.policy = _policy(value)

    @property
    def redetect_every(self) -> int:
        """Frames between full detections (the tracker's ``detect_every``)."""
        return self.tracker.detect_every

    @redetect_every.setter
    def redetect_every(self, value: int) -> None:
        self.tracker.detect_every = value

    @property
    def tracks(self) -> list[Track]:
        """The faces followed in the last frame, largest first."""
        return self.tracker.tracks

    @property
    def quality(self) -> QualityLevel:
        """The blend, detection interval, landmark models and processing height in use."""
        return QualityLevel(
            self.swapper.settings.blend,
            self.redetect_every,
            self.max_height,
            light_landmarks=self.tracker.light or self.analyzer.light_always,
            alternate_landmarks=self.tracker.alternate,
        )

    def set_quality(self, level: QualityLevel) -> None:
        """Use ``level`` from the next frame on (call between frames)."""
        if level.blend != self.swapper.settings.blend:
            self.swapper.settings = self.swapper.settings.model_copy(update={"blend": level.blend})
        self.redetect_every = level.redetect_every
        self.tracker.light = level.light_landmarks
        self.tracker.alternate = level.alternate_landmarks
        if level.max_height != self.max_height:
            self.max_height = level.max_height
            self.reset()  # landmarks were in the other resolution's pixels

    def process(self, frame: Frame) -> Frame:
        timings = frame.timings_ms
        work = self._scaled(frame.image, timings)
        tracks = self.tracker.update(work, frame.capture_ns, timings)
        frame.faces = len(tracks)
        verified = self.liveness.verified(tracks, work, frame.capture_ns, timings)
        swapped = False
        identity = self.identity
        if identity is not None:
            stamp = frame.capture_ns
            done = self.pool.map(lambda w, t: self._swap(work, t, identity, stamp), verified)
            for ok, stages in done:
                swapped |= ok
                for stage, ms in stages.items():
                    timings[stage] = timings.get(stage, 0.0) + ms
        frame.swapped = swapped
        if swapped and work is not frame.image:
            start = time.perf_counter()
            height, width = frame.image.shape[:2]
            frame.image = cv2.resize(work, (width, height), interpolation=cv2.INTER_LINEAR)  # type: ignore[assignment]
            add_stage_ms(timings, "resize", start)
        if swapped:
            start = time.perf_counter()
            self.labeler.apply(frame.image)
            add_stage_ms(timings, "label", start)
        if len(verified) < len(tracks):
            self.liveness.draw_prompt(frame.image)
        return frame

    def _swap(
        self, image: Image, track: Track, identity: Identity, stamp_ns: int
    ) -> tuple[bool, dict[str, float]]:
        """Swap one face (on any worker thread); whether it changed and its stage timings.

        The swap strength follows how reliable the face is (``reliability``):
        it fades out as the face leaves the frame, turns away or gets tiny. What is
        remembered about the face from frame to frame is kept with its track.
        """
        timings: dict[str, float] = {}
        start = time.perf_counter()
        face = track.landmarks
        pose = head_pose(identity, face.points)
        weight = swap_weight(face.points, image.shape, yaw_degrees(pose.rotation))
        state = track.state
        strength = state.fade.update(weight, stamp_ns)
        if strength <= 0.0:
            return False, timings
        target = None
        if self.shaper.strength > 0:
            target = self.shaper.target(state.neutral, face.points, identity, pose, strength)
        add_stage_ms(timings, "shape", start)
        own_eyes = state.eyes.own_eyes(face.points, stamp_ns, self.swapper.settings.eyes)
        swapped = self.swapper.swap(
            image,
            face,
            identity,
            timings,
            strength=strength,
            target=target,
            colour=state.colour,
            own_eyes=own_eyes,
        )
        return swapped, timings

    def _scaled(self, image: Image, timings: dict[str, float]) -> Image:
        """``image`` itself, or a copy scaled down to ``max_height`` lines."""
        height, width = image.shape[:2]
        if self.max_height is None or height <= self.max_height:
            return image
        start = time.perf_counter()
        size = (max(1, round(width * self.max_height / height)), self.max_height)
        small: Image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)  # type: ignore[assignment]
        add_stage_ms(timings, "resize", start)
        return small

    def find_faces(
        self, image: Image, timings: dict[str, float], timestamp_ns: int | None = None
    ) -> list[FaceLandmarks]:
        """The smoothed landmarks of the followed faces, largest first.

        ``timestamp_ns`` is the capture time (monotonic); now when not given.
        """
        stamp = time.monotonic_ns() if timestamp_ns is None else timestamp_ns
        return [t.landmarks for t in self.tracker.update(image, stamp, timings)]

    def reset(self) -> None:
        self.tracker.reset()  # the faces' swap state goes with their tracks
        self.liveness.reset()
