"""The benchmark: a naive synchronous loop against the threaded pipeline, same clip.

Both variants read the same ``JpegClip`` from a ``LiveClipSource`` (an
emulated live MJPG camera: frames are captured on schedule whether read or
not, and a late reader gets the newest one) and hand frames to a null output
that checks what it is given.

- ``naive``: ``read -> process -> write`` in one thread, detecting on every
  frame. It never drops a frame for being old: frames it shows older than
  the latency budget are counted as ``stale_shown``.
- ``pipeline``: the real ``PipelineRunner`` with the processor's own
  tracking (re-detect every few frames); stale frames are dropped.

Figures per variant: per-stage and end-to-end latency (capture to hand-off
to the output), output fps (frames shown over the run's wall time), frames
dropped by reason (``camera``: captured but never read), stale frames shown,
process CPU % (200 % = two busy cores), CPU time per thread, peak RSS, the
faces found per shown frame (mean and median) and the output rate over the
run's second half (``settled_fps``: after the degrade ladder had time to act).
"""

from __future__ import annotations

import gc
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from appliance.config import PipelineSettings
from appliance.errors import ConfigError
from appliance.media.frames import Frame
from appliance.media.null_sink import NullSink
from appliance.media.sink_base import FrameSink
from appliance.media.source_base import FrameSource
from appliance.pipeline.adaptive import AdaptiveController
from appliance.pipeline.garbage import settle_garbage
from appliance.pipeline.meters import summarise
from appliance.pipeline.processor import FrameProcessor
from appliance.pipeline.runner import PipelineRunner
from appliance.pipeline.snapshot import LatencySummary
from appliance.pipeline.stage import age_ms
from appliance.pipeline.telemetry import Telemetry
from appliance.tools.bench_clips import BenchClip
from appliance.tools.live_clip import JpegClip, LiveClipSource
from appliance.tools.resources import ResourceMeter

logger = logging.getLogger(__name__)

VARIANTS = ("naive", "pipeline")
# the processor's stages in frame order; shape, gaze, colour, relight and detail are the
# natural-face steps (issue 14), each reported on its own
STAGES = (
    "decode",
    "queue",
    "detect",
    "landmarks",
    "shape",
    "warp",
    "gaze",
    "colour",
    "relight",
    "detail",
    "blend",
    "label",
    "process",
)
LATENCY_BUDGET_MS = 200.0
WARMUP_FRAMES = 3
HELPER_WAIT_S = 10.0
TELEMETRY_WINDOW = 1024  # latency samples kept at least (the runner's default)
END_GRACE_S = 10.0  # how long past the clip's own length a pipeline run may take

Summary = dict[str, float | None]


@dataclass
class VariantResult:
    """One variant's run over one clip. Latencies in ms; ``None`` where nothing ran."""

    variant: str
    redetect_every: int
    e2e_ms: Summary
    stages_ms: dict[str, Summary]
    dropped: dict[str, int] = field(default_factory=dict)  # by reason; "camera": never read
    clip: str = ""
    size: tuple[int, int] = (0, 0)
    faces: int = 0  # faces the clip shows
    frames_offered: int = 0  # captured by the emulated camera
    frames_read: int = 0
    frames_out: int = 0  # handed to the output
    wall_s: float = 0.0
    output_fps: float = 0.0  # frames_out / wall_s
    stale_shown: int = 0  # shown older than the latency budget
    cpu_percent: float = 0.0
    peak_rss_mib: float = 0.0
    faces_found: float = 0.0  # faces per shown frame, on average
    faces_median: float = 0.0  # faces per shown frame, the median
    swapped: int = 0  # shown frames with a swapped face
    settled_fps: float = 0.0  # output rate over the run's second half
    thread_cpu_ms: dict[str, float] = field(default_factory=dict)  # CPU time by thread name
    extra: dict[str, Any] = field(default_factory=dict)
    # every frame's latencies (ms): "e2e" and each stage's, for ``pooled_run`` (not written out)
    samples_ms: dict[str, list[float]] = field(default_factory=dict, repr=False)

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["samples_ms"]
        data["dropped_total"] = self.dropped_total
        return data


def median_run(runs: Sequence[VariantResult]) -> VariantResult:
    """Of repeated runs of one case and variant, the one whose e2e p95 is the median
    (the higher of the middle two for an even count: never the better of two); each
    run's e2e p95, in run order, goes in its ``extra["runs_p95_ms"]``."""
    if not runs:
        raise ValueError("no runs to choose from")
    chosen = sorted(runs, key=_p95_or_inf)[len(runs) // 2]
    chosen.extra["runs_p95_ms"] = [r.e2e_ms["p95"] for r in runs]
    return chosen


def pooled_run(runs: Sequence[VariantResult]) -> VariantResult:
    """Of repeated runs of one case and variant: the median run (``median_run``: its
    fps, CPU, drops and faces), with its latencies (e2e and every stage) taken over
    every run's frames together. The repeats took turns with the other cases and
    variants, so two variants' pooled frames come from the same minutes of the
    machine, where two median runs may each come from another; the median run's own
    e2e figures go in ``extra["median_run_e2e_ms"]``, the frames pooled in
    ``extra["pooled_frames"]``."""
    chosen = median_run(runs)
    if len(runs) < 2:
        return chosen
    pooled: dict[str, list[float]] = {}
    for run in runs:
        for name, values in run.samples_ms.items():
            pooled.setdefault(name, []).extend(values)
    if "e2e" not in pooled:
        return chosen
    chosen.extra["median_run_e2e_ms"] = chosen.e2e_ms
    chosen.extra["pooled_frames"] = len(pooled["e2e"])
    chosen.e2e_ms = _summary(pooled.pop("e2e"))
    chosen.stages_ms = {name: _summary(values) for name, values in sorted(pooled.items())}
    return chosen


def _p95_or_inf(run: VariantResult) -> float:
    p95 = run.e2e_ms["p95"]
    return math.inf if p95 is None else p95


class CheckingSink(NullSink):
    """A null output that counts the frames it was shown too old, their faces and swaps."""

    def __init__(self, budget_ms: float) -> None:
        super().__init__()
        self.budget_ms = budget_ms
        self.stale = 0
        self.faces = 0
        self.swapped = 0
        self.per_frame: list[int] = []  # faces of each shown frame
        self.shown_ns: list[int] = []  # when each frame was shown (monotonic)

    def _write(self, frame: Frame) -> None:
        super()._write(frame)
        self.stale += int(age_ms(frame) > self.budget_ms)
        self.faces += frame.faces
        self.swapped += int(frame.swapped)
        self.per_frame.append(frame.faces)
        self.shown_ns.append(time.monotonic_ns())

    def settled_fps(self, start_ns: int, end_ns: int) -> float:
        """Frames shown per second over the second half of ``[start_ns, end_ns]``."""
        half = (start_ns + end_ns) // 2
        span_s = (end_ns - half) / 1e9
        return sum(1 for t in self.shown_ns if t >= half) / span_s if span_s > 0 else 0.0


def _summary(values: Sequence[float] | LatencySummary) -> Summary:
    s = values if isinstance(values, LatencySummary) else summarise(np.asarray(values, float))
    return {"p50": s.p50, "p95": s.p95, "p99": s.p99, "max": s.max, "count": s.count}


def run_variant(
    variant: str,
    clip: BenchClip,
    processor: FrameProcessor,
    frames: int,
    *,
    fps: float = 30.0,
    budget_ms: float = LATENCY_BUDGET_MS,
    restarts: bool = True,
) -> VariantResult:
    """Play ``frames`` frames of ``clip`` at ``fps`` through ``variant`` and measure it
    (``restarts``: a large frame is decoded in two halves, ``LiveClipSource``)."""
    if variant not in VARIANTS:
        raise ConfigError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if frames < 1:
        raise ConfigError(f"frames must be at least 1, got {frames}")
    processor.max_faces = clip.faces
    _warm_up(clip.clip, processor)
    # the runner does this as it starts (``pipeline.garbage``); here before the meter, for
    # both variants alike: set-up work, not the frames'
    settle_garbage()
    source = LiveClipSource(clip.clip, fps, frames, restarts=restarts)
    sink = CheckingSink(budget_ms)
    run = _run_naive if variant == "naive" else _run_pipeline
    start_ns = time.monotonic_ns()
    with ResourceMeter() as meter:
        result = run(source, processor, sink, budget_ms)
    result.settled_fps = sink.settled_fps(start_ns, time.monotonic_ns())
    result.clip, result.size, result.faces = clip.name, clip.size, clip.faces
    result.frames_offered, result.frames_read = source.frames_offered, source.frames_read
    result.dropped["camera"] = source.frames_offered - source.frames_read
    result.dropped = {reason: n for reason, n in result.dropped.items() if n}
    _add_figures(result, meter, sink)
    return result


def _warm_up(clip: JpegClip, processor: FrameProcessor) -> None:
    """Run the models on a few frames (first inferences are slow), then forget them; a
    swap helper processes those frames started are waited for (up a second after a
    crowd first appears, and then for good: the runs measure them at work)."""
    for index in range(min(WARMUP_FRAMES, len(clip))):
        processor.process(Frame(clip.decode(index), index, time.monotonic_ns()))
    if processor.wait_helpers(HELPER_WAIT_S):
        processor.process(Frame(clip.decode(0), 0, time.monotonic_ns()))  # its first swaps
    processor.reset()
    gc.collect()


def _run_naive(
    source: LiveClipSource, processor: FrameProcessor, sink: CheckingSink, budget_ms: float
) -> VariantResult:
    """Read, detect + swap, hand off, in one thread; every frame is detected afresh."""
    saved = processor.redetect_every
    processor.redetect_every = 1
    stages: dict[str, list[float]] = {}
    e2e: list[float] = []
    try:
        with source, sink:
            while (frame := source.read()) is not None:
                _process_one(processor, frame, stages)
                e2e.append(age_ms(frame))
                sink.write(frame)
    finally:
        processor.redetect_every = saved
        processor.reset()
    return VariantResult(
        variant="naive",
        redetect_every=1,
        e2e_ms=_summary(e2e),
        stages_ms={k: _summary(v) for k, v in sorted(stages.items())},
        samples_ms={"e2e": e2e, **stages},
    )


def _process_one(processor: FrameProcessor, frame: Frame, stages: dict[str, list[float]]) -> None:
    queue_ms = age_ms(frame)
    start = time.perf_counter()
    processor.process(frame)
    frame.timings_ms["process"] = (time.perf_counter() - start) * 1e3
    frame.timings_ms["queue"] = queue_ms
    for stage, ms in frame.timings_ms.items():
        stages.setdefault(stage, []).append(ms)


def _pipeline_runner(
    source: FrameSource,
    processor: FrameProcessor,
    sinks: Sequence[FrameSink],
    telemetry: Telemetry,
    budget_ms: float,
) -> PipelineRunner:
    """The runner as the appliance builds it (the one place to change what the bench runs):
    with adaptive quality, so a variant that cannot keep up degrades as it would live."""
    controller = AdaptiveController(processor, telemetry, PipelineSettings())
    return PipelineRunner(
        source, processor, sinks, telemetry, latency_budget_ms=budget_ms, controller=controller
    )


def _run_pipeline(
    source: LiveClipSource, processor: FrameProcessor, sink: CheckingSink, budget_ms: float
) -> VariantResult:
    """The threaded pipeline with the processor's own detect/track schedule."""
    telemetry = Telemetry(window_samples=max(TELEMETRY_WINDOW, source.frames))  # every frame
    runner = _pipeline_runner(source, processor, [sink], telemetry, budget_ms)
    configured = processor.quality
    try:
        snap = runner.run_for(timeout_s=source.frames / source.fps + END_GRACE_S)
    finally:
        processor.set_quality(configured)
        processor.reset()
    e2e, stages = telemetry.latency_samples()
    return VariantResult(
        variant="pipeline",
        redetect_every=processor.redetect_every,
        e2e_ms=_summary(snap.e2e_ms),
        stages_ms={k: _summary(v) for k, v in snap.stages_ms.items()},
        dropped=dict(snap.drops),
        samples_ms={"e2e": e2e.tolist(), **{k: v.tolist() for k, v in stages.items()}},
        extra={
            "end_reason": runner.end_reason,
            "errors": snap.errors,
            "passthrough": snap.passthrough,
            "quality": snap.quality,
            "degrade_level": snap.degrade_level,
            "ladder": [
                f"{t.from_state} -> {t.to_state}: {t.reason}"
                for t in snap.transitions
                if t.subject == "degrade"
            ],
        },
    )


def _add_figures(result: VariantResult, meter: ResourceMeter, sink: CheckingSink) -> None:
    """What the output saw and what the run cost."""
    shown = sink.frames_written
    result.frames_out = shown
    result.wall_s = meter.wall_s
    result.output_fps = shown / meter.wall_s if meter.wall_s > 0 else 0.0
    result.stale_shown = sink.stale
    result.faces_found = sink.faces / shown if shown else 0.0
    result.faces_median = float(np.median(sink.per_frame)) if shown else 0.0
    result.thread_cpu_ms = {k: round(v, 1) for k, v in meter.thread_cpu_ms.items()}
    result.swapped = sink.swapped
    result.cpu_percent = meter.cpu_percent
    result.peak_rss_mib = meter.peak_rss_mib
