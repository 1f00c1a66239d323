"""Evidence of a live face that a flat picture cannot give: a blink, a head turn.

Both detectors follow one track's raw (unsmoothed) landmarks frame by frame.

**Blink** (``BlinkDetector``). The eye signal is the larger of the two eyes'
aspect ratios, so it is low only while *both* eyes are closed. Its open-eye
baseline is the track's own median over the last ``BASELINE_S``. A blink is:
open (signal >= ``OPEN`` x baseline) within ``OPEN_BEFORE_S`` before, then
closed (< ``CLOSED`` x baseline) for at most ``MAX_CLOSED_S`` (one frame is
enough: a fast blink at 30 fps), then open again, with the rest of the face
rigid while closed: the non-eye points of each closed frame fit the last
open frame's by a similarity to within ``RIGID_MAX`` inter-ocular distances
(more than talking and expressions change them from frame to frame, 0.075 at
the 99th percentile of the real videos), so a bent or swapped picture does
not count. On the media, the landmark jitter and perspective squash of a
photo moved about never took the signal below 0.67 x baseline (70 attack
clips: 7 stills x 10 motions), while real blinks go below 0.2 x baseline.

**Turn** (``TurnDetector``). Each frame's yaw is solved (``solvePnP``) against
the track's first frame as the 3-D model. A turn is a yaw change of at least
``TURN_DEG`` against some frame of the last ``TURN_WINDOW_S`` whose landmarks a
homography does *not* explain sideways: the misfit along the eye line, which
is where turning about the vertical axis puts the parallax of the nose
against the cheeks, is at least ``PARALLAX_MIN`` inter-ocular distances, on
``TURN_FRAMES`` frames in a row. A flat picture, however tilted, has no
parallax. On the media, a photo tilted by hand shows an apparent yaw change
of up to about 20 degrees (the landmark model reads some perspective tilt as
a head turn), but its sideways misfit stays below 0.02 (every frame pair 15
degrees apart, same 70 clips); real turns of 15 degrees and more leave 0.043
to 0.11, and a rigid head mesh turned by 15 degrees leaves 0.031.

Pitch (a nod) is not evidence. A small open-mouthed portrait tilted back
makes the landmark model itself draw a nodding 3-D face: apparent pitch
15-17 degrees and a misfit *across* the eye line of up to 0.095, as much as
a real nod would give, and the real media hold no nod to tell them apart.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass

import numpy as np

from appliance.vision.head_pose import (
    F64,
    PoseReference,
    inter_ocular_2d,
    pose_xy,
    sideways_parallax,
)
from appliance.vision.mesh import LEFT_EYE_EAR, RIGHT_EYE_EAR
from appliance.vision.pose3d import similarity
from appliance.vision.shape_transfer import eye_aspect_ratio
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

# blink
CLOSED = 0.4  # eye signal below this share of the baseline: both eyes closed
OPEN = 0.75  # at or above this share: open
MAX_CLOSED_S = 0.5  # closed longer than this is not a blink (eyes shut on purpose)
OPEN_BEFORE_S = 0.5  # the eyes were open at most this long before they closed
BASELINE_S = 1.0  # the open-eye baseline: median eye signal over this much history
MIN_BASELINE_FRAMES = 5  # frames of history before a closure can count
RIGID_MAX = 0.08  # non-eye misfit (inter-ocular distances) allowed while closed
# forehead, nose, temples and cheekbones: not moved by a blink or by speech
BLINK_RIGID_POINTS = (10, 151, 9, 8, 168, 6, 197, 195, 5, 4, 1, 98, 327, 127, 356, 234, 454)

# turn
TURN_DEG = 15.0  # yaw change against a recent frame
PARALLAX_MIN = 0.035  # sideways homography misfit (inter-ocular distances) a turn leaves
TURN_WINDOW_S = 3.0  # how far back the frame turned from may be
TURN_FRAMES = 3  # frames in a row that must show the turn
TURN_CANDIDATES = 4  # recent frames (the farthest turned) checked for parallax per frame


def eye_signal(points: FloatArray) -> float:
    """The larger eye aspect ratio of the two eyes: low only when both are closed."""
    return max(eye_aspect_ratio(points, LEFT_EYE_EAR), eye_aspect_ratio(points, RIGHT_EYE_EAR))


def rigid_misfit(before: FloatArray, after: FloatArray) -> float:
    """RMS misfit (inter-ocular distances) of the best similarity between two frames'
    ``BLINK_RIGID_POINTS``: how much the face changed shape apart from the eyes."""
    index = list(BLINK_RIGID_POINTS)
    a = np.zeros((len(index), 3))
    b = np.zeros((len(index), 3))
    a[:, :2], b[:, :2] = before[index, :2], after[index, :2]
    moved = similarity(a, b).apply(a)
    scale = inter_ocular_2d(after)
    if scale <= 0:
        return float("inf")
    return float(np.sqrt(((moved - b) ** 2).sum(axis=1).mean())) / scale


@dataclass
class _Closure:
    """A closure in progress: when it began, the baseline then, the last open frame."""

    start_ns: int
    baseline: float
    open_points: FloatArray
    rigid: bool = True


class BlinkDetector:
    """One track's blinks; ``update`` is True on the frame a blink completes."""

    def __init__(self) -> None:
        self.blinks = 0
        self._history: deque[tuple[int, float]] = deque()
        self._last_open: tuple[int, FloatArray] | None = None
        self._closure: _Closure | None = None

    def update(self, points: FloatArray, timestamp_ns: int) -> bool:
        signal = eye_signal(points)
        baseline = self._baseline(timestamp_ns)
        blinked = False
        if self._closure is not None:
            blinked = self._follow_closure(points, signal, timestamp_ns)
        elif baseline is not None:
            self._maybe_close(points, signal, baseline, timestamp_ns)
        if self._closure is None and baseline is not None and signal >= OPEN * baseline:
            self._last_open = (timestamp_ns, points)
        if self._closure is None:
            self._history.append((timestamp_ns, signal))
        return blinked

    def _baseline(self, now_ns: int) -> float | None:
        while self._history and now_ns - self._history[0][0] > BASELINE_S * 1e9:
            self._history.popleft()
        if len(self._history) < MIN_BASELINE_FRAMES:
            return None
        return float(np.median([s for _, s in self._history]))

    def _maybe_close(self, points: FloatArray, signal: float, baseline: float, now_ns: int) -> None:
        last = self._last_open
        if signal >= CLOSED * baseline or last is None:
            return
        if now_ns - last[0] > OPEN_BEFORE_S * 1e9:
            return
        self._closure = _Closure(now_ns, baseline, last[1])
        self._check_rigid(points)

    def _follow_closure(self, points: FloatArray, signal: float, now_ns: int) -> bool:
        closure = self._closure
        assert closure is not None
        if signal < OPEN * closure.baseline:
            if signal < CLOSED * closure.baseline:
                self._check_rigid(points)
            return False
        self._closure = None
        self._last_open = (now_ns, points)
        if now_ns - closure.start_ns > MAX_CLOSED_S * 1e9 or not closure.rigid:
            return False
        self.blinks += 1
        return True

    def _check_rigid(self, points: FloatArray) -> None:
        closure = self._closure
        if closure is not None and rigid_misfit(closure.open_points, points) > RIGID_MAX:
            closure.rigid = False


@dataclass(frozen=True)
class _PoseSample:
    timestamp_ns: int
    yaw: float
    xy: F64  # POSE_POINTS in image pixels


class TurnDetector:
    """One track's head turns; ``update`` is True on the frame a turn is confirmed."""

    def __init__(self, frame_size: tuple[int, int]) -> None:
        self.frame_size = frame_size
        self.turns = 0
        self._reference: PoseReference | None = None
        self._samples: deque[_PoseSample] = deque()
        self._run = 0  # frames in a row showing a turn

    def update(self, points: FloatArray, timestamp_ns: int) -> bool:
        if self._reference is None:
            self._reference = PoseReference(points, self.frame_size)
        angles = self._reference.angles(points)
        if angles is None:
            self._run = 0
            return False
        sample = _PoseSample(timestamp_ns, angles[0], pose_xy(points))
        while self._samples and timestamp_ns - self._samples[0].timestamp_ns > TURN_WINDOW_S * 1e9:
            self._samples.popleft()
        turned = self._turned(sample, points)
        self._samples.append(sample)
        self._run = self._run + 1 if turned else 0
        if self._run == TURN_FRAMES:
            self.turns += 1
            return True
        return False

    def _turned(self, now: _PoseSample, points: FloatArray) -> bool:
        far = [s for s in self._samples if abs(now.yaw - s.yaw) >= TURN_DEG]
        far.sort(key=lambda s: -abs(now.yaw - s.yaw))
        return any(
            sideways_parallax(s.xy, now.xy, points) >= PARALLAX_MIN for s in far[:TURN_CANDIDATES]
        )
