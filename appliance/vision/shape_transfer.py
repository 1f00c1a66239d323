"""Shape transfer: the identity's face proportions in the visitor's pose and expression.

A swap that keeps the visitor's face shape looks like the visitor with
someone else's skin. Per frame and followed face:

1. the identity's mesh is put into the visitor's head pose by a rigid fit on
   points that move little with expression (``pose3d.RIGID_POINTS``);
2. the visitor's expression is their mesh minus their own neutral mesh, both
   in the identity's frame; the neutral starts as the first frame of the track
   with its mouth closed (so a visitor who arrives talking or laughing keeps
   an open mouth) and follows slowly while the mouth is closed and the eyes
   are open;
3. target = posed identity + expression, eased back to the visitor's own
   outline near the face oval (weight 0 on the oval, 1 at ``outline_band`` of
   the face height inside), so the reshaped face joins the visitor's head and
   background seamlessly.

The swapper then moves the visitor's own eyes and mouth to the target mesh
and lays the identity's texture over it.
"""

from __future__ import annotations

import logging

import cv2
import numpy as np

from appliance.vision.eyelids import scale_lids
from appliance.vision.identity import Identity
from appliance.vision.mesh import (
    FACE_OVAL,
    LEFT_EYE_EAR,
    OUTER_LIPS,
    RIGHT_EYE_EAR,
)
from appliance.vision.neutral import UPPER_INNER, close_mouth, face_height, mouth_gap
from appliance.vision.neutralise import Scores, expressive_weight, neutralise
from appliance.vision.pose3d import F64, RIGID_POINTS, Similarity, similarity
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

NEUTRAL_RATE = 0.05  # share of the way the neutral mesh follows per neutral-looking frame
MOUTH_CLOSED = 0.04  # lip gap / face height below this: mouth closed
EYES_OPEN = 0.2  # eye aspect ratio above this: eyes open
MOUTH_KEEP = 0.5  # share of the visitor's own mouth shape kept at the mouth centre
MOUTH_REACH = 0.25  # face heights from the mouth centre over which that share fades out
# An open-mouthed photo (``Identity.mouth_open``) tells little of the identity's closed
# mouth: its round lips pull the corners in, and closed (``Identity.shape``) they stay
# at the round mouth's mid-height, under where the lips meet: an arched lip line, a
# frown the visitor's smile could not lift (mouthSmileRight r 0.44; the swapped mouth
# read open). So the corners keep the visitor's own shape, the identity's coming back
# over CORNER_REACH face heights from them, and the closed lip line is taken LIP_LEVEL
# of the way to straight, fading out over LIP_REACH face heights outside the lips.
# The visitor's own lips all over lost the recogniser (d_src 0.475 -> 0.529) and
# stretched the photo's skin round its lips (1.99 -> 2.28); each of these two steps
# alone left one figure over (expressive_woman.mp4: corners alone stretch 2.01, the
# line made straight d_src 0.503); together, as here: d_src 0.487, stretch 2.00,
# mouthSmileRight r 0.93 (was 0.44), d_src 0.500 on expressive_woman_long.mp4
CORNER_REACH = 0.12
LIP_LEVEL = 0.15
LIP_REACH = 0.2
MOUTH_CORNERS = (61, 291)


def eye_aspect_ratio(points: FloatArray | F64, ring: tuple[int, ...]) -> float:
    p = np.asarray(points, np.float64)[list(ring), :2]
    width = float(np.linalg.norm(p[0] - p[3]))
    height = float(np.linalg.norm(p[1] - p[5]) + np.linalg.norm(p[2] - p[4]))
    return height / (2 * width) if width > 0 else 0.0


def looks_neutral(points: FloatArray | F64) -> bool:
    """Mouth closed and both eyes open."""
    p = np.asarray(points, np.float64)
    eyes = min(eye_aspect_ratio(p, RIGHT_EYE_EAR), eye_aspect_ratio(p, LEFT_EYE_EAR))
    return face_height(p) > 0 and mouth_gap(p) < MOUTH_CLOSED and eyes > EYES_OPEN


def outline_weights(points: FloatArray, band: float, mouth_keep: float = MOUTH_KEEP) -> F64:
    """Per point, 0 on the face oval rising smoothly to 1 at ``band`` face heights inside."""
    xy = np.asarray(points[:, :2], np.float64)
    oval = xy[list(FACE_OVAL)]
    edges_a, edges_b = oval, np.roll(oval, -1, axis=0)
    seg = edges_b - edges_a
    rel = xy[:, None, :] - edges_a[None, :, :]
    t = np.clip((rel * seg).sum(axis=2) / np.maximum((seg**2).sum(axis=1), 1e-9), 0.0, 1.0)
    nearest = edges_a[None] + t[..., None] * seg[None]
    dist = np.linalg.norm(xy[:, None, :] - nearest, axis=2).min(axis=1)
    height = face_height(points) or 1.0
    x = np.clip(dist / (band * height), 0.0, 1.0)
    weights: F64 = x * x * (3 - 2 * x)
    weights[list(FACE_OVAL)] = 0.0
    # the mouth keeps part of the visitor's own shape: its width and corners carry
    # smiles, which a neutral taken from the first frame cannot tell from shape
    centre = xy[list(OUTER_LIPS)].mean(axis=0)
    near = np.clip(np.linalg.norm(xy - centre, axis=1) / (MOUTH_REACH * height), 0.0, 1.0)
    weights *= 1.0 - mouth_keep * (1.0 - near * near * (3 - 2 * near))
    return weights


def corners_kept(points: FloatArray, reach: float = CORNER_REACH) -> F64:
    """Per point, 0 at the mouth's corners rising smoothly to 1 at ``reach`` face heights
    from the nearer one."""
    xy = np.asarray(points[:, :2], np.float64)
    near = np.min([np.linalg.norm(xy - xy[c], axis=1) for c in MOUTH_CORNERS], axis=0)
    x = np.clip(near / (reach * (face_height(points) or 1.0)), 0.0, 1.0)
    out: F64 = x * x * (3 - 2 * x)
    return out


def level_lips(shape: FloatArray, share: float = LIP_LEVEL, reach: float = LIP_REACH) -> F64:
    """``shape`` (a closed mouth) with its lip line ``share`` of the way to straight at the
    height where the lips meet in the middle; points outside the lips follow less, down
    to none at ``reach`` face heights from them."""
    xy = np.asarray(shape[:, :2], np.float64)
    line = xy[list(UPPER_INNER)]
    order = np.argsort(line[:, 0])
    lift = xy[UPPER_INNER[len(UPPER_INNER) // 2], 1] - np.interp(
        xy[:, 0], line[order, 0], line[order, 1]
    )
    lips = xy[list(OUTER_LIPS)].astype(np.float32).reshape(-1, 1, 2)
    outside = np.array(
        [max(0.0, -cv2.pointPolygonTest(lips, (float(x), float(y)), True)) for x, y in xy]
    )
    t = np.clip(outside / (reach * (face_height(shape) or 1.0)), 0.0, 1.0)
    out = np.asarray(shape, np.float64).copy()
    out[:, 1] += share * (1.0 - t * t * (3 - 2 * t)) * lift
    return out


def head_pose(identity: Identity, visitor: FloatArray) -> Similarity:
    """The rigid fit putting the identity's mesh into the visitor's head pose."""
    rigid = list(RIGID_POINTS)
    return similarity(identity.shape[rigid], visitor[rigid])


class NeutralMesh:
    """One followed face's neutral mesh in the identity's frame (kept with the track,
    ``appliance.vision.face_state``): its first look with the mouth closed and, given
    the blendshape model, its held expression taken out (``neutralise``: a visitor
    who arrives smiling keeps the smile on the swapped face), then eased towards each
    frame that looks neutral, except at the brows and the mouth's corners (a smile
    with closed lips looks neutral to the mouth's gap)."""

    def __init__(self) -> None:
        self.mesh: F64 | None = None
        self._settled: F64 | None = None  # per point: how much the easing moves it

    def update(self, seen: F64, visitor: FloatArray, scores: Scores | None = None) -> F64:
        """The neutral mesh after this frame's ``seen`` mesh (``visitor``: in image pixels)."""
        neutral = self.mesh
        if neutral is None:  # a first look: take it, with the mouth closed, as neutral
            closed = close_mouth(seen.astype(np.float32))
            if scores is not None:
                closed = neutralise(closed, scores)
            neutral = closed.astype(np.float64)
            self._settled = NEUTRAL_RATE * (1.0 - expressive_weight(closed))
        elif looks_neutral(visitor) and self._settled is not None:
            neutral = neutral + self._settled[:, None] * (seen - neutral)
        self.mesh = neutral
        return neutral


class ShapeTransfer:
    """Target meshes for followed faces (each face's neutral mesh is kept with its track)."""

    def __init__(
        self, strength: float = 1.0, outline_band: float = 0.12, scores: Scores | None = None
    ) -> None:
        self.strength = strength
        self.outline_band = outline_band
        self.scores = scores  # the blendshape model: a new face's held expression is read
        self._cached: tuple[Identity, F64, F64] | None = None  # identity, weights, base

    def target(
        self,
        neutral: NeutralMesh,
        visitor: FloatArray,
        identity: Identity,
        pose: Similarity | None = None,
        amount: float = 1.0,
    ) -> FloatArray:
        """Where the swapped face's 478 points go in this frame (image pixels).

        ``neutral``: the face's neutral mesh, updated here; ``pose``: the
        identity-to-visitor fit (``head_pose``), computed when not given;
        ``amount`` scales the reshaping (a fading swap reshapes less).
        """
        pose = pose or head_pose(identity, visitor)
        seen = pose.invert(visitor)  # the visitor's mesh in the identity's frame
        rest = neutral.update(seen, visitor, self.scores)
        outline, base = self._prepared(identity)
        shaped = pose.apply(scale_lids(base + (seen - rest), base, seen, rest))
        weights = outline * (self.strength * amount)
        out = visitor + weights[:, None] * (shaped - visitor)
        return out.astype(np.float32)

    def _prepared(self, identity: Identity) -> tuple[F64, F64]:
        """The identity's outline weights and base shape (worked out once per identity)."""
        if self._cached is None or self._cached[0] is not identity:
            keep = 1.0 if identity.mouth_open else MOUTH_KEEP  # an open mouth has no shape to give
            weights = outline_weights(identity.points, self.outline_band, keep)
            base = identity.shape.astype(np.float64)
            if identity.mouth_open:
                weights = weights * corners_kept(identity.points)
                base = level_lips(identity.shape)
            self._cached = (identity, weights, base)
        return self._cached[1], self._cached[2]
