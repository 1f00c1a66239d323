"""The identity photo's own expression taken out of its mesh (once, at enrolment).

Shape transfer puts the identity's mesh under the visitor's expression, so a
smile or raised brows in the photo stayed on every visitor (portrait_woman_pose
swapped onto a neutral visitor read mouthSmile 0.24-0.28 over the visitor's).
The mouth is closed already (``neutral.close_mouth``); here the brows and the
mouth's corners are moved until the blendshape model (the one ``mirror eval``
measures with) reads no smile, frown of the mouth or raised brows on the mesh:
three Gauss-Newton steps over a few smooth displacements (each brow up or down
and towards the midline, each mouth corner up or down and in or out), each a
bump around its feature falling to 0 a tenth of the face height away, with a
small cost on how far they move so that a neutral photo keeps its own shape.

A lowered brow (browDown) is left as photographed: it is how many people look
(the shared open-mouthed man reads 0.41-0.53), and moving it cost the
independent recogniser 0.1 (d_src 0.48 -> 0.58 on talking_man_greenscreen.mp4);
the identity check names a strong frown instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from appliance.vision.mesh import LEFT_BROW, RIGHT_BROW
from appliance.vision.neutral import face_height
from appliance.vision.pose3d import F64
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

Scores = Callable[[FloatArray], dict[str, float]]

# the blendshapes of a held expression, and how much each counts
EXPRESSION = {
    "browInnerUp": 1.0,
    "browOuterUpLeft": 1.0,
    "browOuterUpRight": 1.0,
    "mouthSmileLeft": 1.0,
    "mouthSmileRight": 1.0,
    "mouthFrownLeft": 1.0,
    "mouthFrownRight": 1.0,
    "mouthStretchLeft": 0.5,
    "mouthStretchRight": 0.5,
    "mouthDimpleLeft": 0.5,
    "mouthDimpleRight": 0.5,
}
ALLOWED: dict[str, float] = {}  # a score up to this is the face's own, not an expression
REACH = 0.1  # a displacement's bump falls to 0 this many face heights from its feature
COST = 4.0  # per (face height)^2 moved, against the expression's sum of squared scores
ITERATIONS = 3
PROBE = 0.005  # finite-difference step, in face heights
DAMPING = 1e-3
MAX_MOVE = 0.08  # no move goes further than this share of the face height
QUIET = 0.1  # a mesh whose expression scores are all below this is left as it is

_INNER_BROW = {"right": (55, 65, 107, 66), "left": (285, 295, 336, 296)}
_CORNERS = {"right": 61, "left": 291}


@dataclass(frozen=True)
class _Move:
    """One displacement: ``direction`` (x, y, in face heights) times a bump around ``at``."""

    at: tuple[int, ...]
    direction: tuple[float, float]


def _moves(points: FloatArray) -> list[_Move]:
    towards = 1.0 if points[1, 0] > points[_CORNERS["right"], 0] else -1.0  # right side -> centre
    return [
        _Move(RIGHT_BROW, (0.0, 1.0)),
        _Move(LEFT_BROW, (0.0, 1.0)),
        _Move(_INNER_BROW["right"], (towards, 0.0)),
        _Move(_INNER_BROW["left"], (-towards, 0.0)),
        _Move((_CORNERS["right"],), (0.0, 1.0)),
        _Move((_CORNERS["left"],), (0.0, 1.0)),
        _Move((_CORNERS["right"],), (towards, 0.0)),
        _Move((_CORNERS["left"],), (-towards, 0.0)),
    ]


def _bumps(points: FloatArray, moves: list[_Move], height: float) -> F64:
    """(M, N, 2): each move's displacement of every point for a unit amount."""
    xy = np.asarray(points[:, :2], np.float64)
    out = np.zeros((len(moves), len(xy), 2))
    for m, move in enumerate(moves):
        near = np.min([np.linalg.norm(xy - xy[i], axis=1) for i in move.at], axis=0)
        t = np.clip(near / (REACH * height), 0.0, 1.0)
        weight = 1.0 - t * t * (3 - 2 * t)
        out[m] = weight[:, None] * np.array(move.direction) * height
    return out


def expressive_weight(points: FloatArray) -> F64:
    """Per point, how much the displacements here move it (0 to 1): the brows and the
    mouth's corners, where a held expression sits."""
    height = face_height(points) or 1.0
    bumps = _bumps(points, _moves(points), height)
    out: F64 = np.clip(np.linalg.norm(bumps, axis=2).max(axis=0) / height, 0.0, 1.0)
    return out


def _over(name: str, scores: dict[str, float]) -> float:
    return max(0.0, scores.get(name, 0.0) - ALLOWED.get(name, 0.0))


def expression_of(scores: dict[str, float]) -> float:
    """The weighted sum of squares of the held-expression scores (over what is allowed)."""
    return float(sum(w * _over(name, scores) ** 2 for name, w in EXPRESSION.items()))


def neutralise(points: FloatArray, scores: Scores) -> FloatArray:
    """``points`` (478, 3, a closed mouth) with the brows and mouth corners moved so that
    ``scores`` (the blendshape model) reads as little held expression as it can."""
    height = face_height(points)
    first = scores(points)
    if height <= 0 or max(first.get(name, 0.0) for name in EXPRESSION) < QUIET:
        return points
    bumps = _bumps(points, _moves(points), height)
    amounts = np.zeros(len(bumps))
    runs = 1
    for _ in range(ITERATIONS):  # Gauss-Newton on the weighted scores and the cost
        value = _residuals(points, bumps, amounts, scores)
        jacobian = np.empty((len(value), len(amounts)))
        for m in range(len(amounts)):
            probe = amounts.copy()
            probe[m] += PROBE
            jacobian[:, m] = (_residuals(points, bumps, probe, scores) - value) / PROBE
        runs += 1 + len(amounts)
        normal = jacobian.T @ jacobian + DAMPING * np.eye(len(amounts))
        amounts = amounts + np.linalg.solve(normal, -jacobian.T @ value)
        amounts = np.clip(amounts, -MAX_MOVE, MAX_MOVE)
    out = _moved(points, bumps, amounts)
    logger.info(
        "identity expression taken out: %.3f -> %.3f (%d model runs; moved up to %.3f of "
        "the face height)",
        expression_of(first),
        expression_of(scores(out)),
        runs,
        float(np.abs(amounts).max()),
    )
    return out


def _moved(points: FloatArray, bumps: F64, amounts: F64) -> FloatArray:
    out = points.copy()
    out[:, :2] += np.tensordot(amounts, bumps, axes=1).astype(points.dtype)
    return out


def _residuals(points: FloatArray, bumps: F64, amounts: F64, scores: Scores) -> F64:
    """The weighted scores of the held expression, then the cost of each move."""
    read = scores(_moved(points, bumps, amounts))
    held = [np.sqrt(w) * _over(name, read) for name, w in EXPRESSION.items()]
    return np.concatenate([np.array(held), np.sqrt(COST) * amounts])
