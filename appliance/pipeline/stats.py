"""Latency statistics: percentiles of per-stage timings."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def percentile(values: Iterable[float], q: float) -> float:
    data = np.fromiter(values, dtype=np.float64)
    return float(np.percentile(data, q)) if data.size else float("nan")


def summarise(samples: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Per stage: p50, p95, p99 and mean (ms) over the frames where it ran."""
    return {
        stage: {
            "p50": percentile(values, 50),
            "p95": percentile(values, 95),
            "p99": percentile(values, 99),
            "mean": float(np.mean(values)) if values else float("nan"),
            "n": float(len(values)),
        }
        for stage, values in samples.items()
    }
