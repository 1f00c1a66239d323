"""The visitor's eyelids at the identity's eye opening: a blink closes the swapped eye fully.

Shape transfer adds the visitor's expression to the identity's mesh as a
difference (``seen - rest``). For the lids a difference is the wrong measure:
an identity with wider eyes than the visitor's keeps them a third open when
the visitor's close (the blink figure then read 0.12-0.19 below the
visitor's; ``mirror eval``). Each lid (upper and lower, per eye) is instead
moved by a ratio: its distance from the eye's corner line is the identity's,
times how open the visitor's lid is now over how open it is at rest.
"""

from __future__ import annotations

import logging

import numpy as np
import numpy.typing as npt

from appliance.vision.mesh import LEFT_EYE, RIGHT_EYE
from appliance.vision.pose3d import F64

logger = logging.getLogger(__name__)

# per eye: outer corner, inner corner, upper lid and lower lid points (the ring between)
_EYES = (
    (RIGHT_EYE[0], RIGHT_EYE[8], RIGHT_EYE[1:8], RIGHT_EYE[9:]),
    (LEFT_EYE[0], LEFT_EYE[8], LEFT_EYE[1:8], LEFT_EYE[9:]),
)
MIN_OPEN = 0.02  # a lid nearer its corner line than this share of the eye's width: closed
MAX_RATIO = 1.5  # an eye opened wider than at rest (surprise) scales at most this much


def _frame(mesh: F64, outer: int, inner: int) -> tuple[F64, F64, float]:
    """The corner line's midpoint, its unit normal (image y down: into the lower lid) and
    the eye's width, in ``mesh``'s x-y."""
    a, b = mesh[outer, :2], mesh[inner, :2]
    width = float(np.linalg.norm(b - a)) or 1.0
    along = (b - a) / width
    normal = np.array([-along[1], along[0]])
    if normal[1] < 0:
        normal = -normal
    return (a + b) / 2.0, normal, width


def _opening(mesh: F64, lid: tuple[int, ...], outer: int, inner: int) -> tuple[F64, float]:
    """Each lid point's signed distance from the corner line, and the lid's mean distance
    as a share of the eye's width."""
    centre, normal, width = _frame(mesh, outer, inner)
    perp: F64 = (mesh[list(lid), :2] - centre) @ normal
    return perp, float(np.abs(perp).mean()) / width


def scale_lids(shaped: F64, base: F64, seen: F64, rest: F64) -> F64:
    """``shaped`` (``base + seen - rest``, all in the identity's frame) with each lid at the
    identity's opening scaled by the visitor's: ``seen``'s over ``rest``'s."""
    out: npt.NDArray[np.float64] = shaped.copy()
    for outer, inner, *lids in _EYES:
        centre, normal, _ = _frame(shaped, outer, inner)
        for lid in lids:
            _, now = _opening(seen, lid, outer, inner)
            _, at_rest = _opening(rest, lid, outer, inner)
            if at_rest < MIN_OPEN:  # no open lid to measure against: the difference stays
                continue
            ratio = min(now / at_rest, MAX_RATIO)
            identity_perp, _ = _opening(base, lid, outer, inner)
            current = (shaped[list(lid), :2] - centre) @ normal
            out[list(lid), :2] += np.outer(identity_perp * ratio - current, normal)
    return out
