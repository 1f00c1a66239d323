"""The liveness benchmark: photo attacks against real people, as APCER and BPCER.

- Attacks: every still that shows a person in the media folder
  (``attack_photo_in_hand.jpg``, ``portrait_*.jpg``, ``painting_*.jpg``), moved
  in front of the camera for ``ATTACK_S`` seconds at 30 fps and 640x480
  (``attack_clips``: pan, zoom, roll, perspective tilt, tremor, blur, noise).
  An attack is *accepted* if any of its faces ever turns LIVE.
- Real people: the ``REAL_VIDEOS``, each in every ``real_variants`` variant
  (as recorded, 15 fps, dropped frames, mirrored, far, noisy and blurred,
  moving, all at once). A clip is *rejected* unless its face turns LIVE
  within ``DEADLINE_S`` of its first blink. The first blink is found
  afterwards, on the whole clip: the first frame where both eyes' aspect
  ratio (the larger of the two) falls below half the clip's open-eye level
  (its 90th percentile).

- Slide-over attacks (``slide_attacks``): each real video, once LIVE, with
  each still slid over the face from the left (0.4 s) and raised from below
  (0.1 s). Accepted if a face is still LIVE ``SLIDE_DEADLINE_S`` after the
  photo covers the face.

APCER = accepted attacks / attacks, BPCER = rejected videos / videos
(ISO/IEC 30107-3). Each frame goes through the processor's own tracker
(detection every 5 frames, raw landmarks) and a ``LivenessGate``; nothing is
swapped, which is all the gate would see of the frame anyway.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from appliance.config import LivenessMode
from appliance.errors import InputError
from appliance.media.frames import Image
from appliance.media.video_source import VideoFileSource
from appliance.tools.attack_clips import PhotoAttack
from appliance.tools.real_variants import VARIANTS, Variant
from appliance.tools.slide_attacks import SlideOver, back_and_forth
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
SLIDE_DEADLINE_S = 1.0  # a photo slid over the face must be refused within this
SLIDE_AFTER_LIVE_S = 0.6  # the slide starts this long after the real face turned LIVE
SLIDE_STYLES = (("left", 0.4, False), ("below", 0.1, True))
BLINK_REFERENCE = 0.5  # first blink: eye signal below this share of the clip's open level
OPEN_PERCENTILE = 90.0  # the clip's open-eye level
REDETECT_EVERY = 5  # the processor's default

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ClipResult:
    """One clip: ``live_s`` is when a face first turned LIVE (None: never)."""

    name: str
    kind: str  # "attack", "slide" or "real"
    frames: int
    fps: float
    live_s: float | None
    first_blink_s: float | None = None  # real clips only
    covered_s: float | None = None  # slide-overs: when the photo covered the face
    last_live_s: float | None = None  # slide-overs: the last time a face was LIVE

    @property
    def time_to_live_s(self) -> float | None:
        """Real clips: seconds from the first blink to LIVE (negative: LIVE before it)."""
        if self.live_s is None or self.first_blink_s is None:
            return None
        return self.live_s - self.first_blink_s

    @property
    def refused_after_s(self) -> float | None:
        """Slide-overs: seconds from covering to the last LIVE frame (None: none after)."""
        if self.covered_s is None or self.last_live_s is None:
            return None
        if self.last_live_s < self.covered_s:
            return None
        return self.last_live_s - self.covered_s

    @property
    def error(self) -> bool:
        """An attack accepted, or a real face not LIVE within the deadline."""
        if self.kind == "attack":
            return self.live_s is not None
        if self.kind == "slide":
            late = self.refused_after_s
            return late is not None and late > SLIDE_DEADLINE_S
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
        """(photo attacks accepted, photo attacks)."""
        return self._rate("attack")

    @property
    def apcer_slide(self) -> tuple[int, int]:
        """(slide-over attacks still LIVE a second after covering, slide-overs)."""
        return self._rate("slide")

    def median_time_to_live_s(self) -> float | None:
        """The real clips' median time from the first blink to LIVE."""
        times = [c.time_to_live_s for c in self.clips if c.kind == "real"]
        known = [t for t in times if t is not None]
        return float(np.median(known)) if known else None

    @property
    def bpcer(self) -> tuple[int, int]:
        """(real faces not LIVE within the deadline, real clips)."""
        return self._rate("real")

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "apcer": list(self.apcer),
            "apcer_slide": list(self.apcer_slide),
            "bpcer": list(self.bpcer),
            "median_time_to_live_s": self.median_time_to_live_s(),
            "clips": [
                asdict(c)
                | {"time_to_live_s": c.time_to_live_s, "refused_after_s": c.refused_after_s}
                for c in self.clips
            ],
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


@dataclass
class Followed:
    """What the gate made of a clip: frames, first and last LIVE times, eye signals."""

    frames: int = 0
    live_s: float | None = None
    last_live_s: float | None = None
    times: list[float] = field(default_factory=list)
    signals: list[float] = field(default_factory=list)  # largest face's (NaN: none)


def follow_timed(
    frames: Iterable[tuple[float, Image]], analyzer: FaceAnalyzer, mode: LivenessMode
) -> Followed:
    """Each (seconds, image) through the tracker and a ``LivenessGate``."""
    tracker = Tracker(analyzer, detect_every=REDETECT_EVERY)
    gate = LivenessGate(mode)
    tracker.watching = gate.watching  # as the processor's liveness stage sets it
    out = Followed()
    for t_s, image in frames:
        out.frames += 1
        stamp_ns = round(t_s * 1e9)
        tracks = tracker.update(image, stamp_ns)
        size = (image.shape[1], image.shape[0])
        gate.update({t.track_id: t.raw.points for t in tracks}, size, stamp_ns)
        out.times.append(t_s)
        out.signals.append(eye_signal(tracks[0].raw.points) if tracks else float("nan"))
        if any(gate.is_live(t.track_id) for t in tracks):
            out.live_s = t_s if out.live_s is None else out.live_s
            out.last_live_s = t_s
    return out


def follow(
    frames: Iterable[Image], fps: float, analyzer: FaceAnalyzer, mode: LivenessMode
) -> tuple[int, float | None, list[float]]:
    """Frames seen, when a face first turned LIVE, and the largest face's eye signal
    per frame (NaN without a face)."""
    timed = ((index / fps, image) for index, image in enumerate(frames))
    seen = follow_timed(timed, analyzer, mode)
    return seen.frames, seen.live_s, seen.signals


def first_blink_s(
    signals: list[float], fps: float, times: list[float] | None = None
) -> float | None:
    """When both eyes first close: the reference the deadline counts from (``times``:
    each signal's time; by default ``index / fps``)."""
    values = np.asarray(signals, np.float64)
    if not np.isfinite(values).any():
        return None
    level = float(np.nanpercentile(values, OPEN_PERCENTILE))
    closed = np.nonzero(values < BLINK_REFERENCE * level)[0]
    if not closed.size:
        return None
    return times[int(closed[0])] if times is not None else float(closed[0]) / fps


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


def read_video(path: Path) -> tuple[list[Image], float]:
    """Every frame of ``path`` (the real videos are short) and its frame rate."""
    frames, fps = _video_frames(path)
    return list(frames), fps


def face_height(image: Image, analyzer: FaceAnalyzer) -> float:
    faces = analyzer.analyze(image)
    if not faces:
        raise InputError("no face in the real video's first frame")
    _, y0, _, y1 = faces[0].box()
    return y1 - y0


def run_variant(
    name: str,
    frames: list[Image],
    fps: float,
    *,
    chosen: Variant,
    analyzer: FaceAnalyzer,
    mode: LivenessMode,
) -> ClipResult:
    """One real video re-shot as ``chosen`` says."""
    timed = chosen.apply(
        ((i / fps, f) for i, f in enumerate(frames)), face_height(frames[0], analyzer)
    )
    seen = follow_timed(timed, analyzer, mode)
    span = seen.times[-1] - seen.times[0] if len(seen.times) > 1 else 0.0
    rate = (seen.frames - 1) / span if span > 0 else fps
    blink = first_blink_s(seen.signals, rate, seen.times)
    return ClipResult(f"{name} ({chosen.name})", "real", seen.frames, rate, seen.live_s, blink)


def run_slide(
    name: str,
    frames: list[Image],
    fps: float,
    *,
    photo: Path,
    start_s: float,
    style: tuple[str, float, bool],
    analyzer: FaceAnalyzer,
    mode: LivenessMode,
    seed: int,
) -> ClipResult:
    """``photo`` slid over the face of a real video from ``start_s``."""
    still = read_image(photo)
    found = analyzer.analyze(still)
    if not found:
        raise InputError(f"{photo.name} shows no face")
    label, slide_s, from_below = style
    slide = SlideOver(
        still, found[0].box(), start_s, seed=seed, slide_s=slide_s, from_below=from_below
    )

    def locate(image: Image) -> tuple[float, float, float, float] | None:
        faces = analyzer.analyze(image)
        return faces[0].box() if faces else None

    real = back_and_forth(frames, fps, slide.end_s + 1.0)
    seen = follow_timed(slide.frames(real, locate), analyzer, mode)
    return ClipResult(
        f"{name} + {photo.name} ({label})",
        "slide",
        seen.frames,
        fps,
        seen.live_s,
        covered_s=slide.covered_s,
        last_live_s=seen.last_live_s,
    )


def run_liveness_bench(
    media: Path,
    analyzer: FaceAnalyzer,
    mode: LivenessMode,
    *,
    motions: int = 1,
    variants: Sequence[str] | None = None,
    slides: bool = True,
    progress: Progress | None = None,
) -> LivenessReport:
    """Every attack (``motions`` different motions per still), every real video in every
    variant (``variants``: names, default all) and every slide-over (``slides``) of ``media``."""
    results: list[ClipResult] = []

    def add(result: ClipResult) -> ClipResult:
        results.append(result)
        if progress is not None:
            progress(format_clip(result))
        return result

    for path, seed in itertools.product(attack_stills(media), range(motions)):
        add(run_attack(path, analyzer, mode, seed))
    chosen = [v for v in VARIANTS if variants is None or v.name in variants]
    for path in real_videos(media):
        frames, fps = read_video(path)
        live_s: float | None = None
        for v in chosen:
            done = add(run_variant(path.name, frames, fps, chosen=v, analyzer=analyzer, mode=mode))
            if v.name == "original":
                live_s = done.live_s
        if not slides or live_s is None:
            continue
        for seed, (photo, style) in enumerate(
            itertools.product(attack_stills(media), SLIDE_STYLES)
        ):
            start_s = live_s + SLIDE_AFTER_LIVE_S
            add(
                run_slide(
                    path.name,
                    frames,
                    fps,
                    photo=photo,
                    start_s=start_s,
                    style=style,
                    analyzer=analyzer,
                    mode=mode,
                    seed=seed,
                )
            )
    return LivenessReport(mode, tuple(results))


def _s(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f} s"


def format_clip(c: ClipResult) -> str:
    seconds = c.frames / c.fps if c.fps else 0.0
    head = f"{c.kind:6} {c.name}: {c.frames} frames ({seconds:.1f} s), LIVE at {_s(c.live_s)}"
    if c.kind == "attack":
        return head + (": ACCEPTED" if c.error else ": rejected")
    if c.kind == "slide":
        late = c.refused_after_s
        when = "refused before covering" if late is None else f"LIVE until {late:.2f} s after"
        verdict = "ACCEPTED" if c.error else "refused"
        return f"{head}, photo covers at {_s(c.covered_s)}, {when}: {verdict}"
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
        f"  APCER slide-over (LIVE {SLIDE_DEADLINE_S:g} s after the photo covers the face): "
        f"{_percent(*report.apcer_slide)}"
    )
    lines.append(
        f"  BPCER (real faces not LIVE within {DEADLINE_S:g} s of the first blink): "
        f"{_percent(*report.bpcer)}"
    )
    lines.append(
        f"  median time to LIVE after the first blink: {_s(report.median_time_to_live_s())}"
    )
    return "\n".join(lines)
