"""The benchmark: per-stage and end-to-end latency and fps, variants side by side.

Each variant processes the same frames (decoded once per run, timed as the
``decode`` stage) with the synchronous processor, so figures compare like
with like. Stages: decode, detect, landmarks, warp, blend, label; ``total``
is the wall time of one frame from decode start to label end.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from appliance.media.source_base import FrameSource
from appliance.pipeline.frames import Frame
from appliance.pipeline.processor import FrameProcessor
from appliance.pipeline.stats import summarise

logger = logging.getLogger(__name__)

STAGES = ("decode", "detect", "landmarks", "warp", "blend", "label", "total")


@dataclass
class BenchResult:
    clip: str
    size: tuple[int, int]
    variant: str
    frames: int
    swapped: int
    wall_s: float
    stages: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def fps(self) -> float:
        return self.frames / self.wall_s if self.wall_s > 0 else float("nan")


def _frames(source: FrameSource, limit: int) -> Iterator[tuple[Frame, float]]:
    with source:
        for _ in range(limit):
            start = time.perf_counter()
            frame = source.read()
            if frame is None:
                return
            yield frame, (time.perf_counter() - start) * 1e3


def run_variant(
    clip: str,
    make_source: Callable[[], FrameSource],
    processor: FrameProcessor,
    variant: str,
    limit: int,
) -> BenchResult:
    samples: dict[str, list[float]] = {stage: [] for stage in STAGES}
    processor.reset()
    swapped = count = 0
    size = (0, 0)
    wall_start = time.perf_counter()
    for frame, decode_ms in _frames(make_source(), limit):
        start = time.perf_counter()
        processor.process(frame)
        frame.timings_ms["decode"] = decode_ms
        frame.timings_ms["total"] = decode_ms + (time.perf_counter() - start) * 1e3
        for stage, value in frame.timings_ms.items():
            samples.setdefault(stage, []).append(value)
        swapped += int(frame.swapped)
        count += 1
        size = (frame.image.shape[1], frame.image.shape[0])
    wall = time.perf_counter() - wall_start
    stats = summarise({k: v for k, v in samples.items() if v})
    return BenchResult(clip, size, variant, count, swapped, wall, stats)


def format_table(results: list[BenchResult]) -> str:
    header = f"{'clip':26} {'size':9} {'variant':22} {'fps':>6} {'swap%':>5}"
    for stage in STAGES:
        header += f" {stage + ' p50/p95':>18}"
    lines = [header, "-" * len(header)]
    for r in results:
        line = (
            f"{r.clip[:26]:26} {r.size[0]}x{r.size[1]:<5} {r.variant[:22]:22} "
            f"{r.fps:6.1f} {100 * r.swapped / max(r.frames, 1):5.0f}"
        )
        for stage in STAGES:
            s = r.stages.get(stage)
            cell = "-" if s is None or np.isnan(s["p50"]) else f"{s['p50']:.1f}/{s['p95']:.1f}"
            line += f" {cell:>18}"
        lines.append(line)
    return "\n".join(lines)
