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

Faces' landmarks run two at a time (``FacePool``). The swap holds Python's
lock most of its time, so each face after the first (the largest) is swapped
in a helper process of its own (``swap_helper``; at most one per usable CPU),
all at once while this thread swaps the first. A helper is started the first
time a frame has that many faces and replaced a minute after it fails; its
faces are swapped here until it is up (two at a time, on the pool).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TypedDict

import cv2

from appliance.config import LivenessSettings
from appliance.media.frames import Frame, Image
from appliance.pipeline.liveness_stage import LivenessStage
from appliance.pipeline.quality import QualityLevel
from appliance.pipeline.swap_helper import Sent, SwapHelper
from appliance.timing import add_stage_ms
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.blend import ColourMemory
from appliance.vision.face_pool import ALONE, CALLER, FacePool, usable_cpus
from appliance.vision.identity import Identity
from appliance.vision.label import Labeler
from appliance.vision.one_euro import OneEuroParams
from appliance.vision.reliability import swap_weight, yaw_degrees
from appliance.vision.shape_transfer import ShapeTransfer, head_pose
from appliance.vision.swap_geometric import GeometricSwapper
from appliance.vision.tracker import Policy, Track, Tracker
from appliance.vision.types import FaceLandmarks, FloatArray

logger = logging.getLogger(__name__)


class SwapArgs(TypedDict):
    strength: float
    target: FloatArray | None
    colour: ColourMemory
    own_eyes: tuple[float, float]


HELPER_RESTART_S = 60.0  # a swap helper process that failed is replaced this much later
HELPER_AFTER_FRAMES = 2  # helpers start on the second frame in a row with several faces


@dataclass(frozen=True)
class _Plan:
    """One face's swap this frame, before it is done: the stage timings so far, how
    strongly, onto what mesh (None: the visitor's own) and how much of each own eye."""

    timings: dict[str, float]
    strength: float
    target: FloatArray | None
    own_eyes: tuple[float, float]

    def swap_args(self, colour: ColourMemory) -> SwapArgs:
        """The keyword arguments of ``GeometricSwapper.swap`` (and ``SwapHelper.send``)."""
        return {
            "strength": self.strength,
            "target": self.target,
            "colour": colour,
            "own_eyes": self.own_eyes,
        }


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
        swap_process: bool = True,
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
        expressions = None if analyzer.expressions is None else analyzer.expressions.load()
        self.shaper = ShapeTransfer(
            swapper.settings.shape_transfer, scores=None if expressions is None else expressions.run
        )
        self.liveness = LivenessStage(liveness, labeler)
        self.tracker.watching = self.liveness.watching  # faces not yet LIVE: full landmarks
        # faces after the first are swapped in helper processes (``swap_helper``) where
        # two can run at once and the swap is the embedded geometric one (the helpers
        # run no other)
        self.swap_process = (
            swap_process and self.pool.parallel and type(swapper) is GeometricSwapper
        )
        self.helpers: list[SwapHelper] = []
        # one per usable CPU: three tiled 640x480 faces' swaps took 19.9-21.8 ms a frame
        # with two helpers, 21.0-22.8 with one, 24.9-27.4 on threads (two CPUs, paced)
        self.max_helpers = usable_cpus()
        self._crowd_frames = 0  # frames in a row with more than one face to swap

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
        try:
            return self._process(frame)
        finally:  # the periodic detection runs now, in the wait for the next frame
            self.tracker.launch_detection()

    def _process(self, frame: Frame) -> Frame:
        timings = frame.timings_ms
        work = self._scaled(frame.image, timings)
        tracks = self.tracker.update(work, frame.capture_ns, timings, hold_detection=True)
        frame.faces = len(tracks)
        verified = self.liveness.verified(tracks, work, frame.capture_ns, timings)
        swapped = False
        identity = self.identity
        if identity is not None:
            stamp = frame.capture_ns
            done = self._swap_faces(work, verified, identity, stamp)
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

    def wait_helpers(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the helper processes started so far to be ready;
        whether there are any and they all are."""
        deadline = time.monotonic() + timeout_s
        ready = [h.wait_ready(max(0.0, deadline - time.monotonic())) for h in self.helpers]
        return bool(ready) and all(ready)

    def _swap_faces(
        self, image: Image, tracks: list[Track], identity: Identity, stamp_ns: int
    ) -> list[tuple[bool, dict[str, float]]]:
        """Swap every face of ``tracks`` (in place): the first ones here (on the pool),
        the last ones each in a ready helper process, at the same time."""
        helpers = self._ready_helpers(len(tracks) - 1)
        mine = len(tracks) - len(helpers)
        out: list[tuple[bool, dict[str, float]]] = [(False, {})] * len(tracks)
        sent: list[tuple[int, SwapHelper, _Plan, Sent]] = []
        unsent: list[tuple[int, _Plan]] = []
        for index, helper in enumerate(helpers, start=mine):
            plan = self._plan(image, tracks[index], identity, stamp_ns)
            if plan is None:
                continue
            face, colour = tracks[index].landmarks, tracks[index].state.colour
            settings = self.swapper.settings
            started = helper.send(image, face, identity, settings, **plan.swap_args(colour))
            if started is None:
                unsent.append((index, plan))
            else:
                sent.append((index, helper, plan, started))
        out[:mine] = self.pool.map(
            lambda _, t: self._swap(image, t, identity, stamp_ns), tracks[:mine]
        )
        for index, helper, plan, started in sent:
            state = tracks[index].state
            done = helper.receive(image, started, state.colour)
            if done is None:
                unsent.append((index, plan))
                continue
            swapped, stages, state.colour = done
            out[index] = swapped, plan.timings | stages
        for index, plan in unsent:
            out[index] = self._apply(image, tracks[index], identity, plan)
        return out

    def _ready_helpers(self, count: int) -> list[SwapHelper]:
        """The helper processes ready for ``count`` faces (up to ``max_helpers``);
        from the second frame in a row with more than one face (not for a photo), starts
        any missing, and replaces any failed ``HELPER_RESTART_S`` ago."""
        self._crowd_frames = self._crowd_frames + 1 if count > 0 else 0
        if not self.swap_process or self._crowd_frames < HELPER_AFTER_FRAMES:
            return []
        count = min(count, self.max_helpers)
        now = time.monotonic()
        for i in range(count):
            helper = self.helpers[i] if i < len(self.helpers) else None
            if helper is None:
                self.helpers.append(SwapHelper())
            elif helper.failed and now - helper.failed_at >= HELPER_RESTART_S:
                self.helpers[i] = SwapHelper()
        return [h for h in self.helpers[:count] if h.ready]

    def _swap(
        self, image: Image, track: Track, identity: Identity, stamp_ns: int
    ) -> tuple[bool, dict[str, float]]:
        """Swap one face (on any worker thread); whether it changed and its stage timings.

        The swap strength follows how reliable the face is (``reliability``):
        it fades out as the face leaves the frame, turns away or gets tiny. What is
        remembered about the face from frame to frame is kept with its track.
        """
        plan = self._plan(image, track, identity, stamp_ns)
        if plan is None:
            return False, {}
        return self._apply(image, track, identity, plan)

    def _plan(self, image: Image, track: Track, identity: Identity, stamp_ns: int) -> _Plan | None:
        """How strongly and onto what mesh this frame swaps the face; None when it
        has faded out. (Updates the face's fade and eye hand-over: once a frame.)"""
        start = time.perf_counter()
        face = track.landmarks
        pose = head_pose(identity, face.points)
        weight = swap_weight(face.points, image.shape, yaw_degrees(pose.rotation))
        state = track.state
        strength = state.fade.update(weight, stamp_ns)
        if strength <= 0.0:
            return None
        target = None
        if self.shaper.strength > 0:
            target = self.shaper.target(state.neutral, face.points, identity, pose, strength)
        timings: dict[str, float] = {}
        add_stage_ms(timings, "shape", start)
        own_eyes = state.eyes.own_eyes(face.points, stamp_ns, self.swapper.settings.eyes)
        return _Plan(timings, strength, target, own_eyes)

    def _apply(
        self, image: Image, track: Track, identity: Identity, plan: _Plan
    ) -> tuple[bool, dict[str, float]]:
        """The swap ``plan`` made, here."""
        colour = track.state.colour
        swapped = self.swapper.swap(
            image, track.landmarks, identity, plan.timings, **plan.swap_args(colour)
        )
        return swapped, plan.timings

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
