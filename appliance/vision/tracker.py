"""Faces followed from frame to frame, with stable ids and smoothed landmarks.

A full detection runs every ``detect_every`` frames, and at once whenever
there is no track or a track is lost (landmark presence below threshold).
With a second CPU the periodic one runs on a helper thread and is taken a
frame or two later (``detect_ahead``), so it adds nothing to a frame's
latency; the tile scan for small faces still runs in line.
Between detections each track's crop follows its own previous frame's raw
landmarks (``roi_from_landmarks``), moved on by the face's last
frame-to-frame motion; that is cheaper than detecting and better aligned
than a detection box.

On a detection frame, detections are matched to tracks by the distance of
their centres (in face sizes), so ids stay stable; a matched track keeps the
landmarks it followed this frame (or gets fresh ones from the detection when
following failed), a detection nobody matched starts a new track with a new
id, and a track no detection matched is dropped.

Landmarks are smoothed per track by a One Euro filter whose speed is
measured in inter-ocular distances per second, so one set of parameters
suits near and far faces. ``update`` returns the same ``Track`` objects
frame after frame, updated in place; each carries its face's swap state
(``face_state``), which goes when the track is dropped.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from appliance.timing import add_stage_ms
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.detect_ahead import DetectAhead
from appliance.vision.face_pool import ALONE, FacePool
from appliance.vision.face_state import FaceState
from appliance.vision.landmarks import PRESENCE_THRESHOLD
from appliance.vision.light_landmarks import wants_light
from appliance.vision.one_euro import OneEuroFilter, OneEuroParams
from appliance.vision.roi import roi_from_detection, roi_from_landmarks
from appliance.vision.types import Detection, FaceLandmarks, FloatArray, Roi

logger = logging.getLogger(__name__)

Policy = Literal["largest", "all"]
Box = tuple[float, float, float, float]
Image = npt.NDArray[np.uint8]

MATCH_DISTANCE = 0.6  # detection-to-track centre distance, in face sizes, to be the same face
RECROP_OFFSET = 0.08  # landmarks this far (in crop sizes) off the crop centre are re-run centred
# at most this many re-runs: a crop half a face off (a fast move reversing: the prediction
# ran on the other way) sees half the face, and its landmarks' centre is off too
MAX_RECROPS = 2
# faces taking turns (a crowd, the ladder's last level): one face's landmarks a frame for
# up to this many faces, so three faces' landmarks cost one face's. Each face every third
# frame against every other: its landmarks differ from those of every frame by 0.007-0.017
# of the eye distance on average against 0.004-0.010 (p95 0.016-0.040 against 0.009-0.022;
# three clips tiled three times at 640x480, light landmarks: 0.4-1.3 px on average)
MAX_TURN_CYCLE = 3
PREDICT_MIN = 0.01  # motion below this many crop sizes per frame is not predicted
DUPLICATE_IOU = 0.5  # two tracks overlapping more than this follow one face: keep one
SMALL_FACE_SHARE = 1 / 8  # faces under this share of the frame's longer side may be unseen
# by the whole-frame detection pass (the tile scan finds them): kept while their landmarks hold
KEEP_BONUS = 1.25  # an existing track outranks a new face unless that is this much larger
_SCAN_NOW = 1 << 30  # "frames since the last tile scan" after a reset: scan at once
# Outer eye corners (image-left eye, image-right eye) for the face scale.
EYE_OUTER_A, EYE_OUTER_B = 33, 263


def turn_cycle(faces: int) -> int:
    """Frames in one round of ``faces`` faces taking turns: every other frame for one face,
    one face a frame for two or three (each every third frame), and each face every
    ``MAX_TURN_CYCLE``-th frame for more."""
    return min(MAX_TURN_CYCLE, max(2, faces))


def _older(a: _Candidate, b: _Candidate) -> bool:
    """Whether ``a`` continues an older track than ``b`` does (a new face is the newest)."""
    return a.track is not None and (b.track is None or a.track.track_id < b.track.track_id)


def inter_ocular(points: FloatArray) -> float:
    """Distance between the outer eye corners in 3D (pixels): little changed by head turns."""
    return float(np.linalg.norm(points[EYE_OUTER_B] - points[EYE_OUTER_A]))


def box_centre(box: Box) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def box_side(box: Box) -> float:
    return max(box[2] - box[0], box[3] - box[1])


def iou(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def centre_distance(det: Detection, centre: tuple[float, float], side: float) -> float:
    """Distance of a detection from a face centre, in face sizes (the larger of the two)."""
    cx, cy = box_centre(det.box)
    return math.hypot(cx - centre[0], cy - centre[1]) / max(side, box_side(det.box), 1.0)


def _nobody(track_id: int | None) -> bool:
    return False


@dataclass
class Track:
    """One followed face. ``landmarks`` are smoothed, ``raw`` straight from the model;
    ``state`` is what the swap remembers about the face, gone with the track."""

    track_id: int
    raw: FaceLandmarks
    landmarks: FaceLandmarks
    age_frames: int = 1  # frames this track has been followed, counting this one
    since_detection: int = 0  # frames since a detection last confirmed it (0: this frame)
    velocity: tuple[float, float] = (0.0, 0.0)  # raw mesh centre motion, pixels per frame
    smoother: OneEuroFilter = field(default_factory=OneEuroFilter, repr=False)
    state: FaceState = field(default_factory=FaceState, repr=False)
    # where the model last put the face (raw mesh centre) and how many frames ago
    _model_centre: tuple[float, float] | None = field(default=None, repr=False)
    _since_model: int = field(default=0, repr=False)

    @property
    def size(self) -> float:
        return self.raw.roi.size

    @property
    def centre(self) -> tuple[float, float]:
        return box_centre(self.raw.box())

    def next_roi(self) -> Roi:
        """The crop for the next frame: around the raw mesh, moved on by the last motion."""
        roi = roi_from_landmarks(self.raw.points)
        vx, vy = self.velocity
        if math.hypot(vx, vy) < PREDICT_MIN * roi.size:
            return roi  # landmark noise, not motion: a still crop keeps the landmarks still
        return replace(roi, cx=roi.cx + vx, cy=roi.cy + vy)

    def coasted(self) -> FaceLandmarks:
        """The raw landmarks moved on by the last motion: this frame's, when the model was
        not run for the face (faces taking turns: ``turn_cycle``)."""
        vx, vy = self.velocity
        shift = np.array((vx, vy), np.float32)
        points = self.raw.points.copy()
        points[:, :2] += shift
        unrefined = self.raw.unrefined
        if unrefined is not None:
            unrefined = unrefined.copy()
            unrefined[:, :2] += shift
        roi = replace(self.raw.roi, cx=self.raw.roi.cx + vx, cy=self.raw.roi.cy + vy)
        return replace(self.raw, points=points, roi=roi, unrefined=unrefined, coasted=True)

    def smooth(self, raw: FaceLandmarks, timestamp_ns: int) -> None:
        """Take this frame's raw landmarks and update the smoothed ones and the motion.

        The motion is measured between landmarks the model gave only: measured
        against a coasted frame (itself moved by the motion) it would flip sign
        each frame, and a still face taking turns would swing by it."""
        self._since_model += 1
        if not raw.coasted:
            x1, y1 = box_centre(raw.box())
            if self._model_centre is not None:
                (x0, y0), frames = self._model_centre, self._since_model
                self.velocity = ((x1 - x0) / frames, (y1 - y0) / frames)
            self._model_centre, self._since_model = (x1, y1), 0
        points = self.smoother(raw.points, timestamp_ns, scale=inter_ocular(raw.points))
        self.raw = raw
        self.landmarks = FaceLandmarks(points=points, presence=raw.presence, roi=raw.roi)


@dataclass
class _Candidate:
    """A face for this frame: an existing track (maybe followed) or a new detection."""

    track: Track | None
    face: FaceLandmarks

    @property
    def rank(self) -> float:
        return self.face.roi.size * (KEEP_BONUS if self.track is not None else 1.0)


class Tracker:
    """Follows up to ``max_faces`` faces (``policy="all"``) or the largest one."""

    def __init__(
        self,
        analyzer: FaceAnalyzer,
        detect_every: int = 5,
        policy: Policy = "largest",
        max_faces: int = 3,
        *,
        smoothing: OneEuroParams | None = None,
        presence_threshold: float = PRESENCE_THRESHOLD,
        pool: FacePool | None = None,
        detect_ahead: bool | None = None,
    ) -> None:
        self.analyzer = analyzer
        self.pool = pool or FacePool(parallel=False)  # followed faces' landmarks over threads
        # the periodic detection on a helper thread (detect_ahead); by default where the
        # pool has a second CPU for the faces too
        ahead = self.pool.parallel if detect_ahead is None else detect_ahead
        copy = analyzer.detector_copy() if ahead else None
        tiles = analyzer.tile_detector_copy() if copy is not None else None
        self._ahead = DetectAhead(copy, analyzer.tiles, tiles) if copy is not None else None
        self.detect_every = detect_every  # may be changed at run time
        self.light = False  # every face on the light landmarks (the ladder); changed at run time
        # the ladder's last level: the faces' landmarks in turn (``turn_cycle``);
        # on the others it coasts on its last motion (``Track.coasted``)
        self.alternate = False
        self._frames = 0
        # whether a face (by track id; None: a new face) is watched for liveness: such a face
        # gets the full landmark model whatever its size (the processor's liveness stage)
        self.watching: Callable[[int | None], bool] = _nobody
        self.policy: Policy = policy
        self.max_faces = max_faces
        self.smoothing = smoothing or OneEuroParams()
        self.presence_threshold = presence_threshold
        self.detections = 0  # detection runs since construction
        self.recrops = 0  # landmark runs repeated on a re-centred crop since construction
        self._tracks: list[Track] = []
        self._next_id = 1
        self._since_detect = 0
        self._since_scan = _SCAN_NOW  # frames since the tile scan last ran
        self._restart_scan()

    @property
    def tracks(self) -> list[Track]:
        """The tracks of the last ``update``, largest first."""
        return list(self._tracks)

    @property
    def detect_ahead(self) -> DetectAhead | None:
        """The helper that runs the periodic detection, or None (in line)."""
        return self._ahead

    @property
    def limit(self) -> int:
        return 1 if self.policy == "largest" else max(1, self.max_faces)

    def launch_detection(self) -> None:
        """Start the periodic detection held by ``update(hold_detection=True)``, if any."""
        if self._ahead is not None:
            self._ahead.launch()

    def reset(self) -> None:
        """Drop every track; the next frame detects. Ids keep counting up."""
        if self._ahead is not None:
            self._ahead.cancel()
        self._tracks = []
        self._since_detect = 0
        self._since_scan = _SCAN_NOW
        self._restart_scan()

    def _restart_scan(self) -> None:
        """The tile scan (the analyzer's, shared) sweeps from its first tile again: what a
        tracker finds does not depend on where another one left the sweep."""
        if self.analyzer.tiles is not None:
            self.analyzer.tiles.restart()

    def update(
        self,
        image: Image,
        timestamp_ns: int,
        timings_ms: dict[str, float] | None = None,
        *,
        hold_detection: bool = False,
    ) -> list[Track]:
        """Follow or detect the faces of ``image``; returns the live tracks, largest first.

        ``hold_detection``: a periodic detection this frame starts on the helper waits
        for ``launch_detection`` (the caller's frame done); a held one is launched at the
        next update at the latest."""
        timings = timings_ms if timings_ms is not None else {}
        self.launch_detection()  # one held on the last frame and not launched since
        self._since_scan += 1
        followed = self._follow(image, timings) if self._tracks else []
        due = self._since_detect + 1 >= max(1, self.detect_every)
        lost = any(f.presence < self.presence_threshold for f in followed)
        # detecting every frame means this frame's own detection: in line
        ahead = self._ahead if self.detect_every > 1 else None
        found = ahead.ready() if ahead is not None else None
        scan = self._scan_due()
        # a scan (room for more faces) stays in line only where the helper cannot run it
        inline_scan = ahead is not None and not ahead.scans and scan
        if not self._tracks or lost or (due and (ahead is None or inline_scan)):
            if ahead is not None:
                ahead.cancel()
            candidates = self._detect(image, followed, timings, scan)
        elif found is not None:  # the detection started a frame or two ago
            candidates = self._take(image, found, followed, timings, time.perf_counter())
        else:
            if due and ahead is not None:
                start = time.perf_counter()
                if ahead.hold(image, scan) and scan:
                    self._since_scan = 0
                if not hold_detection:
                    ahead.launch()
                add_stage_ms(timings, "detect", start)
            candidates = [_Candidate(t, f) for t, f in zip(self._tracks, followed, strict=True)]
            self._since_detect += 1
        start = time.perf_counter()
        self._tracks = self._commit(candidates, timestamp_ns)
        add_stage_ms(timings, "landmarks", start)
        return self.tracks

    def _follow(self, image: Image, timings: dict[str, float]) -> list[FaceLandmarks]:
        """Each track's landmarks, from a crop around its previous raw landmarks."""
        start = time.perf_counter()
        self._frames += 1

        turns = self.alternate or self._crowd  # the ladder's last level, or a crowd
        # in turn by id, not by place (the places of faces of one size swap): the faces'
        # ranks by id; the liveness gate sees every frame of a face it watches
        cycle = turn_cycle(len(self._tracks))
        rank = {tid: i for i, tid in enumerate(sorted(t.track_id for t in self._tracks))}

        def coasts(track: Track) -> bool:
            due = (self._frames + rank[track.track_id]) % cycle == 0
            return not due and not self.watching(track.track_id)

        def one(worker: int, track: Track) -> FaceLandmarks:
            watched = self.watching(track.track_id)
            return self._landmarks(image, track.next_roi(), worker, track.raw, watched)

        coasting = [turns and coasts(track) for track in self._tracks]
        pairs = list(zip(self._tracks, coasting, strict=True))
        due = [track for track, c in pairs if not c]
        # taking turns (the light landmarks: their crops are much of their time, in Python),
        # one face after the other, each on every core; otherwise in pairs on the pool
        done = [one(ALONE, track) for track in due] if turns else self.pool.map(one, due)
        ran = iter(done)
        faces = [track.coasted() if c else next(ran) for track, c in pairs]
        add_stage_ms(timings, "landmarks", start)
        return faces

    @property
    def _crowd(self) -> bool:
        """With ``FaceAnalyzer.crowds``: more faces (the last frame's, until this one
        commits) than the pool runs at once."""
        return self.analyzer.crowds and len(self._tracks) > self.pool.width

    def _scan_due(self) -> bool:
        """Whether a detection now includes the tile scan (small faces): while there is
        room for more faces, at most every detect_every frames (nobody in view detects
        every frame, the scan need not)."""
        return len(self._tracks) < self.limit and self._since_scan >= max(1, self.detect_every)

    def _detect(
        self, image: Image, followed: list[FaceLandmarks], timings: dict[str, float], scan: bool
    ) -> list[_Candidate]:
        """This frame's detection, in line; with the tile scan's next tiles when ``scan``."""
        start = time.perf_counter()
        self._since_scan = 0 if scan else self._since_scan
        found = self.analyzer.candidates(image, scan=scan)
        return self._take(image, found, followed, timings, start)

    def _take(
        self,
        image: Image,
        found: list[Detection],
        followed: list[FaceLandmarks],
        timings: dict[str, float],
        start: float,
    ) -> list[_Candidate]:
        """The candidates of a detection's faces ``found``: matched to the followed faces,
        new ones confirmed and given landmarks from ``image``."""
        self.detections += 1
        self._since_detect = 0
        pairs = self._match(found, followed)
        # a candidate continuing a followed face is that face; only new ones need confirming
        pairs = [p for p in pairs if p[1] is not None or self.analyzer.confirm(image, p[0])]
        start = add_stage_ms(timings, "detect", start)
        candidates = [c for d, t, f in pairs if (c := self._candidate(image, d, t, f))]
        matched = {id(t) for _, t, _ in pairs if t is not None}
        candidates += self._small_unmatched(image, followed, matched)
        add_stage_ms(timings, "landmarks", start)
        return candidates

    def _small_unmatched(
        self, image: Image, followed: list[FaceLandmarks], matched: set[int]
    ) -> list[_Candidate]:
        """Followed faces no detection matched that are too small for the whole-frame pass
        to see (the tile scan found them, a few tiles at a time): their landmarks' presence
        vouches for them until the scan comes round again."""
        small = max(image.shape[:2]) * SMALL_FACE_SHARE
        return [
            _Candidate(t, f)
            for t, f in zip(self._tracks, followed, strict=True)
            if id(t) not in matched
            and f.presence >= self.presence_threshold
            and box_side(f.box()) < small
        ]

    def _match(
        self, detections: list[Detection], followed: list[FaceLandmarks]
    ) -> list[tuple[Detection, Track | None, FaceLandmarks | None]]:
        """Each detection with the track it continues (greedy, nearest first) and its landmarks."""
        costs = [
            (self._distance(d, t, f), i, j)
            for i, d in enumerate(detections)
            for j, (t, f) in enumerate(zip(self._tracks, followed, strict=True))
        ]
        pairs: dict[int, int] = {}
        for cost, i, j in sorted(costs):
            if cost < MATCH_DISTANCE and i not in pairs and j not in pairs.values():
                pairs[i] = j
        out: list[tuple[Detection, Track | None, FaceLandmarks | None]] = []
        for i, det in enumerate(detections):
            match = pairs.get(i)
            if match is None:
                out.append((det, None, None))
            else:
                out.append((det, self._tracks[match], followed[match]))
        return out

    def _distance(self, det: Detection, track: Track, face: FaceLandmarks) -> float:
        """How far a detection is from a track: from this frame's landmarks when present,
        else from where the track was or would have moved to."""
        if face.presence >= self.presence_threshold:
            return centre_distance(det, box_centre(face.box()), box_side(face.box()))
        side = box_side(track.raw.box())
        (x, y), (vx, vy) = track.centre, track.velocity
        return min(centre_distance(det, (x, y), side), centre_distance(det, (x + vx, y + vy), side))

    def _candidate(
        self, image: Image, det: Detection, track: Track | None, face: FaceLandmarks | None
    ) -> _Candidate | None:
        """The track's followed landmarks when present, else landmarks from the detection."""
        if face is None or face.presence < self.presence_threshold:
            before, track_id = (None, None) if track is None else (track.raw, track.track_id)
            roi = roi_from_detection(det)
            face = self._landmarks(image, roi, before=before, watched=self.watching(track_id))
        if face.presence < self.presence_threshold:
            return None
        return _Candidate(track, face)

    def _landmarks(
        self,
        image: Image,
        roi: Roi,
        worker: int = ALONE,
        before: FaceLandmarks | None = None,
        watched: bool = False,
    ) -> FaceLandmarks:
        """Landmarks from the crop ``roi``, run again on a centred crop when the face was off
        centre (a fast move, a wrong prediction): off-centre crops give skewed landmarks.
        ``before``: the face's raw landmarks of the frame before, if it is followed. Small
        faces, and every face on the ladder's light level, on one CPU (the analyzer's
        ``light_always``) or in a crowd (more faces than the pool runs at once, with
        ``auto`` landmarks), get the light landmarks, unless ``watched`` for liveness."""
        # in a crowd each pair's attention models run on one thread each (7.8 ms here)
        everyone = self.light or self.analyzer.light_always or self._crowd
        light = None
        if not watched and wants_light(roi, before, everyone):
            light = self.analyzer.light_on(worker)

        def run(crop: Roi) -> FaceLandmarks:
            if light is not None:
                return light.run(image, crop, before)
            return self.analyzer.landmarks_on(worker).run(image, crop)

        face = run(roi)
        for _ in range(MAX_RECROPS):
            if face.presence < self.presence_threshold:
                return face
            centred = roi_from_landmarks(face.points)
            if math.hypot(centred.cx - roi.cx, centred.cy - roi.cy) <= RECROP_OFFSET * roi.size:
                return face
            self.recrops += 1
            again = run(centred)
            if again.presence < self.presence_threshold:
                return face
            face, roi = again, centred
        return face

    def _select(self, candidates: list[_Candidate]) -> list[_Candidate]:
        """The policy's faces, largest first (existing tracks favoured), without duplicates:
        two tracks that slid onto one face (one face passing before another) become one,
        the older (what was learnt of the face stays with it, whichever ran its model)."""
        kept: list[_Candidate] = []
        for cand in sorted(candidates, key=lambda c: -c.rank):
            box = cand.face.box()
            twin = next((k for k in kept if iou(box, k.face.box()) > DUPLICATE_IOU), None)
            if twin is None:
                if len(kept) < self.limit:
                    kept.append(cand)
            elif _older(cand, twin):
                kept[kept.index(twin)] = cand
        return kept

    def _commit(self, candidates: list[_Candidate], timestamp_ns: int) -> list[Track]:
        """Update the kept faces' tracks (smoothing, age) or start new ones; largest first."""
        tracks: list[Track] = []
        for cand in self._select(candidates):
            track = cand.track
            if track is None:
                track = self._new_track(cand.face)
            else:
                track.age_frames += 1
                track.since_detection = 0 if self._since_detect == 0 else track.since_detection + 1
            track.smooth(cand.face, timestamp_ns)
            tracks.append(track)
        return sorted(tracks, key=lambda t: -t.size)

    def _new_track(self, face: FaceLandmarks) -> Track:
        track = Track(self._next_id, face, face, smoother=OneEuroFilter(self.smoothing))
        logger.debug("track %d started at %.0f px", track.track_id, face.roi.size)
        self._next_id += 1
        return track
