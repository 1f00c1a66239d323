"""The liveness gate: a followed face is swapped only once it has shown it is alive.

Per track: UNVERIFIED until the evidence the mode asks for is seen, then
LIVE while the track still follows that live face (``liveness_watch``: no
jump onto another face, no flat sheet, eyes not perfectly still); a track
that stops looking live is UNVERIFIED again and needs new evidence. When the
tracker loses the face its state is forgotten, and a face that comes back
starts UNVERIFIED again.

Evidence (``liveness_evidence``) is what a flat picture cannot give:

- ``blink``: both eyes close and reopen within half a second against the
  track's own open-eye baseline, the rest of the face rigid meanwhile;
- ``turn``: a head turn of at least 15 degrees (``solvePnP``) whose landmarks
  a homography cannot explain, i.e. with the parallax of a 3-D head.

Modes: ``blink``, ``turn``, ``either`` (the default: whichever comes first)
and ``both``; ``off`` makes every face LIVE at once and must be set on
purpose (the dashboard shows it as a warning). The gate reads the raw,
unsmoothed landmarks: smoothing would shave off a one-frame blink.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import get_args

from appliance.compat import StrEnum
from appliance.config import LivenessMode
from appliance.errors import ConfigError
from appliance.vision.liveness_evidence import BlinkDetector, TurnDetector
from appliance.vision.liveness_watch import LiveWatch
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

MODES: tuple[str, ...] = get_args(LivenessMode)
DEFAULT_PROMPTS: dict[str, str] = {
    "blink": "Blink to start",
    "either": "Blink to start",
    "turn": "Turn your head to start",
    "both": "Blink and turn your head to start",
    "off": "",
}


class Liveness(StrEnum):
    UNVERIFIED = "unverified"
    LIVE = "live"


@dataclass(frozen=True)
class LivenessCounts:
    """Faces followed now by state, and the mode (for telemetry and the dashboard)."""

    mode: str
    live: int = 0
    unverified: int = 0


@dataclass
class _Face:
    """One track's evidence so far."""

    blink: BlinkDetector | None
    turn: TurnDetector | None
    blinked: bool = False
    turned: bool = False
    first_ns: int = 0
    live: bool = False
    evidence: list[str] = field(default_factory=list)
    watch: LiveWatch | None = None  # while LIVE
    revoked: int = 0  # times LIVE was taken back


class LivenessGate:
    """Follows each track's evidence; ``is_live`` says whether it may be swapped."""

    def __init__(self, mode: LivenessMode = "either") -> None:
        if mode not in MODES:
            raise ConfigError(f"liveness mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode: LivenessMode = mode
        self._faces: dict[int, _Face] = {}

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def update(
        self, faces: Mapping[int, FloatArray], frame_size: tuple[int, int], timestamp_ns: int
    ) -> None:
        """Take this frame's raw landmarks by track id (image pixels; ``frame_size`` is
        (width, height)); tracks not in ``faces`` were lost and are forgotten."""
        for gone in set(self._faces) - set(faces):
            del self._faces[gone]
        for track_id, points in faces.items():
            face = self._faces.get(track_id)
            if face is None:
                face = self._faces[track_id] = self._new_face(frame_size, timestamp_ns)
            if not face.live:
                self._observe(track_id, face, points, frame_size, timestamp_ns)
            elif face.watch is not None:
                self._watch(track_id, face, points, frame_size, timestamp_ns)

    def is_live(self, track_id: int) -> bool:
        if not self.enabled:
            return True
        face = self._faces.get(track_id)
        return face is not None and face.live

    def watching(self, track_id: int | None) -> bool:
        """Whether the gate still waits for this face (None: one not followed yet) to show it
        is live. Its landmarks should then come from the full model: the light one
        (``light_landmarks``) sees the shortest blinks less well (a one-frame blink at 0.48
        of the open eyes' signal where the full model sees 0.15; a blink counts below 0.4)."""
        return self.enabled and (track_id is None or not self.is_live(track_id))

    def state(self, track_id: int) -> Liveness:
        return Liveness.LIVE if self.is_live(track_id) else Liveness.UNVERIFIED

    def counts(self) -> LivenessCounts:
        """Faces followed by state (with ``off``, every followed face is live)."""
        live = sum(1 for t in self._faces if self.is_live(t))
        return LivenessCounts(self.mode, live, len(self._faces) - live)

    def reset(self) -> None:
        self._faces.clear()

    def _new_face(self, frame_size: tuple[int, int], timestamp_ns: int) -> _Face:
        if not self.enabled:
            return _Face(None, None, first_ns=timestamp_ns, live=True)
        blink = BlinkDetector() if self.mode in ("blink", "either", "both") else None
        turn = TurnDetector(frame_size) if self.mode in ("turn", "either", "both") else None
        return _Face(blink, turn, first_ns=timestamp_ns)

    def _watch(
        self,
        track_id: int,
        face: _Face,
        points: FloatArray,
        frame_size: tuple[int, int],
        stamp_ns: int,
    ) -> None:
        assert face.watch is not None
        reason = face.watch.update(points, stamp_ns)
        if reason is None:
            return
        logger.info("track %d no longer live: %s", track_id, reason)
        fresh = self._new_face(frame_size, stamp_ns)
        fresh.revoked = face.revoked + 1
        self._faces[track_id] = fresh

    def _observe(
        self,
        track_id: int,
        face: _Face,
        points: FloatArray,
        frame_size: tuple[int, int],
        stamp_ns: int,
    ) -> None:
        if face.blink is not None and face.blink.update(points, stamp_ns) and not face.blinked:
            face.blinked = True
            face.evidence.append("blink")
        if face.turn is not None and face.turn.update(points, stamp_ns) and not face.turned:
            face.turned = True
            face.evidence.append("turn")
        if self.mode == "both":
            face.live = face.blinked and face.turned
        else:
            face.live = face.blinked or face.turned
        if face.live:
            face.watch = LiveWatch(frame_size)
            face.watch.update(points, stamp_ns)
            waited_s = (stamp_ns - face.first_ns) / 1e9
            logger.info(
                "track %d live (%s) after %.1f s", track_id, " + ".join(face.evidence), waited_s
            )
