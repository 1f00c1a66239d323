"""The liveness benchmark: photo attacks against real people, as APCER and BPCER.

- Attacks: every still that shows a person in the media folder
  (``attack_photo_in_hand.jpg``, ``portrait_*.jpg``, ``painting_*.jpg``), moved
  in front of the camera for ``ATTACK_S`` seconds at 30 fps and 640x480
  (``attack_clips``: pan, zoom, roll, perspective tilt, tremor, blur, noise).
  An attack is *accepted* if any of its faces ever turns LIVE.
- Real people: the ``REAL_VIDEOS``, at their own size and rate. A video is
  *rejected* unless its face turns LIVE within ``DEADLINE_S`` of its first
  blink. The first blink is found afterwards, on the whole clip: the first
  frame where both eyes' aspect ratio (the larger of the two) falls below
  half the clip's open-eye level (its 90th percentile).

APCER = accepted attacks / attacks, BPCER = rejected videos / videos
(ISO/IEC 30107-3). Each frame goes through the processor's own tracker
(detection every 5 frames, raw landmarks) and a ``LivenessGate``; nothing is
swapped, which is all the gate would see of the frame anyway.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from appliance.config import LivenessMode
from appliance.errors import InputError
from appliance.media.frames import Image
from appliance.media.video_source import VideoFileSource
from appliance.tools.attack_clips import PhotoAttack
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.identity import read_image
from appliance.vision.liveness import LivenessGate
from appliance.vision.liveness_evidence import eye_signal
from appliance.vision.tracker import Tracker

logger = logging.getLogger(__name__)

ATTACK_S = 10.0
ATTACK_FPS = 30.0
ATTACK_SIZE = (640, 480)
ATTACK_PATTERNS = ("attack_photo_in_hand.jpg", "portrait_*.jpg", "painting_*.jpg")
REAL_VIDEOS = ("talking_man_greenscreen.mp4", "expressive_woman.mp4", "expressive_woman_long.mp4")
DEADLINE_S = 3.0  # a real face must be LIVE within this of its first blink
BLINK_REFERENCE = 0.5  # first blink: eye signal below this share of the clip's open level
OPEN_PERCENTILE = 90.0  # the clip's open-eye level
REDETECT_EVERY = 5  # the processor's default

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ClipResult:
    """One clip: ``live_s`` is when a face first turned LIVE (None: never)."""

    name: str
    kind: str  # "attack" or "real"
    frames: int
    fps: float
    live_s: float | None
    first_blink_s: float | None = None  # real clips only

    @property
    def time_to_live_s(self) -> float | None:
        """Real clips: seconds from the first blink to LIVE (negative: LIVE before it)."""
        if self.live_s is None or self.first_blink_s is None:
            return None
        return self.live_s - self.first_blink_s

    @property
    def error(self) -> bool:
        """An attack accepted, or a real face not LIVE within the deadline."""
        if self.kind == "attack":
            return self.live_s is not None
        late = self.time_to_live_s
        return late is None or late > DEADLINE_S


@dataclass(frozen=True)
class LivenessReport:
    mode: str
    clips: tuple[ClipResult, ...]

    def _rate(self, kind: str) -> tuple[int, int]:
        chosen = [c for c in self.clips if c.kind == kind]
        return sum(c.error for c in chosen), len(chosen)

    @property
    def apcer(self) -> tuple[int, int]:
        """(attacks accepted, attacks)."""
        return self._rate("attack")

    @property
    def bpcer(self) -> tuple[int, int]:
        """(real faces not LIVE within the deadline, real clips)."""
        return self._rate("real")

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "apcer": list(self.apcer),
            "bpcer": list(self.bpcer),
            "clips": [asdict(c) | {"time_to_live_s": c.time_to_live_s} for c in self.clips],
        }


def attack_stills(media: Path) -> list[Path]:
    """The stills of people in ``media``, in ``ATTACK_PATTERNS`` order."""
    found: list[Path] = []
    for pattern in ATTACK_PATTERNS:
        found.extend(p for p in sorted(media.glob(pattern)) if p not in found)
    return found


def real_videos(media: Path) -> list[Path]:
    return [media / name for name in REAL_VIDEOS if (media / name).is_file()]


def attack_clip(photo: Image, analyzer: FaceAnalyzer, seed: int) -> Iterator[Image]:
    """``ATTACK_S`` seconds of ``photo`` moved about (its largest face in view)."""
    faces = analyzer.analyze(photo)
    if not faces:
        raise InputError("attack photo shows no face")
    attack = PhotoAttack(photo, faces[0].box(), size=ATTACK_SIZE, fps=ATTACK_FPS, seed=seed)
    return attack.frames(round(ATTACK_S * ATTACK_FPS))


def follow(
    frames: Iterable[Image], fps: float, analyzer: FaceAnalyzer, mode: LivenessMode
) -> tuple[int, float | None, list[float]]:
    """Frames seen, when a face first turned LIVE, and the largest face's eye signal
    per frame (NaN without a face)."""
    tracker = Tracker(analyzer, detect_every=REDETECT_EVERY)
    gate = LivenessGate(mode)
    live_s: float | None = None
    signals: list[float] = []
    count = 0
    for index, image in enumerate(frames):
        count += 1
        stamp_ns = round(index * 1e9 / fps)
        tracks = tracker.update(image, stamp_ns)
        size = (image.shape[1], image.shape[0])
        gate.update({t.track_id: t.raw.points for t in tracks}, size, stamp_ns)
        signals.append(eye_signal(tracks[0].raw.points) if tracks else float("nan"))
        if live_s is None and any(gate.is_live(t.track_id) for t in tracks):
            live_s = index / fps
    return count, live_s, signals


def first_blink_s(signals: list[float], fps: float) -> float | None:
    """When both eyes first close: the reference the deadline counts from."""
    values = np.asarray(signals, np.float64)
    if not np.isfinite(values).any():
        return None
    level = float(np.nanpercentile(values, OPEN_PERCENTILE))
    closed = np.nonzero(values < BLINK_REFERENCE * level)[0]
    return float(closed[0]) / fps if closed.size else None


def _video_frames(path: Path) -> tuple[Iterator[Image], float]:
    source = VideoFileSource(path, paced=False)

    def frames() -> Iterator[Image]:
        with source:
            for frame in source:
                yield frame.image

    return frames(), source.fps


def run_attack(path: Path, analyzer: FaceAnalyzer, mode: LivenessMode, seed: int) -> ClipResult:
    frames = attack_clip(read_image(path), analyzer, seed)
    count, live_s, _ = follow(frames, ATTACK_FPS, analyzer, mode)
    name = path.name if seed == 0 else f"{path.name} (motion {seed})"
    return ClipResult(name, "attack", count, ATTACK_FPS, live_s)


def run_real(path: Path, analyzer: FaceAnalyzer, mode: LivenessMode) -> ClipResult:
    frames, fps = _video_frames(path)
    count, live_s, signals = follow(frames, fps, analyzer, mode)
    return ClipResult(path.name, "real", count, fps, live_s, first_blink_s(signals, fps))


def run_liveness_bench(
    media: Path,
    analyzer: FaceAnalyzer,
    mode: LivenessMode,
    *,
    motions: int = 1,
    progress: Progress | None = None,
) -> LivenessReport:
    """Every attack (``motions`` different motions per still) and real video of ``media``."""
    results: list[ClipResult] = []
    for path, seed in itertools.product(attack_stills(media), range(motions)):
        results.append(run_attack(path, analyzer, mode, seed))
        if progress is not None:
            progress(format_clip(results[-1]))
    for path in real_videos(media):
        results.append(run_real(path, analyzer, mode))
        if progress is not None:
            progress(format_clip(results[-1]))
    return LivenessReport(mode, tuple(results))


def _s(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f} s"


def format_clip(c: ClipResult) -> str:
    seconds = c.frames / c.fps if c.fps else 0.0
    head = f"{c.kind:6} {c.name}: {c.frames} frames ({seconds:.1f} s), LIVE at {_s(c.live_s)}"
    if c.kind == "attack":
        return head + (": ACCEPTED" if c.error else ": rejected")
    verdict = "rejected (BPCER)" if c.error else "ok"
    return (
        f"{head}, first blink at {_s(c.first_blink_s)}, "
        f"time to LIVE {_s(c.time_to_live_s)}: {verdict}"
    )


def _percent(errors: int, total: int) -> str:
    return f"{errors}/{total} = {100.0 * errors / total:.1f} %" if total else "-"


def format_report(report: LivenessReport) -> str:
    lines = [f"liveness mode {report.mode}:"]
    lines += [f"  {format_clip(c)}" for c in report.clips]
    lines.append(f"  APCER (attacks accepted): {_percent(*report.apcer)}")
    lines.append(
        f"  BPCER (real faces not LIVE within {DEADLINE_S:g} s of the first blink): "
        f"{_percent(*report.bpcer)}"
    )
    return "\n".join(lines)
