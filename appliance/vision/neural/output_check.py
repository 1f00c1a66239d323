"""Checks on what a network returned: fp16 engines give NaN or black squares on some GPUs.

``BadOutputError`` carries the reason; the swapper then falls back (fp32,
then geometric) and records why.
"""

from __future__ import annotations

import logging

import numpy as np
import numpy.typing as npt

from appliance.errors import ModelError

logger = logging.getLogger(__name__)

FLAT_STD = 1e-3  # below this the output is one colour: a black (or grey) square


class BadOutputError(ModelError):
    """A network returned NaN, infinite or flat output."""


class EmbeddingError(BadOutputError):
    """The identity embedding (or its conversion) is unusable."""


def output_problem(output: npt.NDArray[np.float32]) -> str | None:
    """Why ``output`` cannot be shown, or None when it looks like an image or embedding."""
    if output.size == 0:
        return "empty output"
    finite = np.isfinite(output)
    if not finite.all():
        share = 100.0 * (1.0 - float(finite.mean()))
        return f"NaN or infinite values in {share:.0f}% of the output"
    std = float(output.std())
    if std < FLAT_STD:
        kind = "black" if abs(float(output.mean())) < FLAT_STD else "uniform"
        return f"flat output (std {std:.1e}): a {kind} square"
    return None
