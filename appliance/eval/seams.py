"""The fill step: a colour step the swap put across the face's midline or across the
edge of the part it filled (``mirror eval``).

A turned identity photo is completed from its own mirror image at enrolment
(``appliance.vision.symmetry``); where a half or a patch of the face then
differs in colour from the rest, a person sees a hard line down the nose or
round an eye. The figure looks for such a line where it can be, on two sets of
lines of the mesh the swap drew (``appliance.eval.drawn``):

- the midline, forehead to upper lip and lower lip to chin (``MIDLINE``; the
  mouth opening skipped);
- the fill edge: mesh edges between a triangle whose identity texture is the
  photo's own and one that is filled (mostly from the mirror side,
  ``completed.mirrored > 0.5``) or left to the visitor (seen too poorly,
  ``visibility < symmetry.UNSEEN[1]``, or mostly transparent in the identity's
  texture); never the face oval, nor the mouth opening.

At each sample along a line, the step is the CIE76 colour difference (Lab,
L 0-100) between the mean colours of two thin strips, one either side, from
``STRIP[0]`` to ``STRIP[1]`` face heights off the line: a finite-difference
gradient across it, over a few pixels, so a hard seam counts in full and a
change feathered over a good part of the face hardly at all. The same samples
are measured on the original frame (the visitor's own face: the side of a
turned visitor's nose is a real step) and the figure of a set of lines is the
median (``PERCENTILE``) of swapped step minus original step over its samples:
a seam along the line counts, an identity's own feature that crosses it here
and there (a brow, a nostril) does not. The frame's figure is the larger of
the two sets'. Samples whose strips leave the face (either oval), reach into
the eyes, brows or lips (of either mesh, grown by ``FEATURE_GROW``: an
identity's eye is not a seam) or into the AI label's box are not used.

What it does not see: a patch whose edge is on neither line (a grey eye
region, a pasted strand of hair at the temple), and colour that changes
gradually across the face. On today's shared media it measured every swap,
turned photos and frontal alike, at -0.7 to 1.7 (clip means), and a swap made
with one half of the face 15 % darker at 4.2 to 9.8 (see the README).
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.identity import Identity
from appliance.vision.mesh import (
    FACE_OVAL,
    INNER_MOUTH,
    LEFT_BROW,
    LEFT_EYE,
    OUTER_LIPS,
    RIGHT_BROW,
    RIGHT_EYE,
)
from appliance.vision.symmetry import UNSEEN, triangle_ids

logger = logging.getLogger(__name__)

Image = npt.NDArray[np.uint8]
Points = npt.NDArray[np.floating]
Box = tuple[int, int, int, int]  # x0, y0, x1, y1, ends exclusive

# forehead to upper lip, lower lip to chin, down the middle of the face
MIDLINE = (
    (10, 151, 9, 8, 168, 6, 197, 195, 5, 4, 1, 19, 94, 2, 164, 0),
    (17, 18, 200, 199, 175, 152),
)
STRIP = (0.008, 0.035)  # strips from, to this far off the line (face heights)
MIN_STRIP_PX = (1.0, 3.0)
STRIP_TAPS = 4  # samples across each strip
SPACING = 0.01  # samples along a line this far apart (face heights), 1 px at least
PERCENTILE = 50.0
MIN_SAMPLES = 8  # a set of lines with fewer usable samples has no figure
# eyes, brows and lips (of both meshes) grown by this (face heights): no sample's
# strips reach into them (an identity's own eye or lip line is no seam)
FEATURE_GROW = 0.02
FILLED = 0.5  # mirrored share, transparency above which a triangle counts as filled
_OVAL = np.array(FACE_OVAL)
_MOUTH = np.zeros(478, bool)
_MOUTH[list(INNER_MOUTH)] = True
_LIPS = _MOUTH.copy()
_LIPS[list(OUTER_LIPS)] = True
_ON_OVAL = np.zeros(478, bool)
_ON_OVAL[_OVAL] = True
NO_EDGES: npt.NDArray[np.intp] = np.zeros((0, 2), np.intp)


@dataclass(frozen=True)
class FillStep:
    """One frame's fill step (Lab units, swapped over original); None: not measurable."""

    midline: float | None
    edge: float | None

    @property
    def figure(self) -> float | None:
        values = [v for v in (self.midline, self.edge) if v is not None]
        return max(values) if values else None


def filled_triangles(identity: Identity) -> npt.NDArray[np.bool_]:
    """Per swap triangle: whether its texture is filled (mirror side) or left to the
    visitor (seen too poorly, or transparent in the identity's texture)."""
    count = len(identity.triangles)
    filled = np.zeros(count, bool)
    done = getattr(identity, "completed", None)
    if done is not None:
        filled |= np.asarray(done.mirrored) > FILLED
        filled |= np.asarray(done.visibility) < UNSEEN[1]
    texture = getattr(identity, "texture_bgra", None)
    if texture is not None:
        filled |= mean_alpha(texture[..., 3], identity.texture_points, identity.triangles) < (
            FILLED * 255.0
        )
    return filled


def mean_alpha(
    alpha: Image, uv: npt.NDArray[np.floating], tris: npt.NDArray[np.integer]
) -> npt.NDArray[np.float64]:
    """Per triangle, the mean alpha of the texture pixels it covers (255 when none)."""
    ids = triangle_ids(uv, tris, (alpha.shape[1], alpha.shape[0]))
    sums = np.bincount(
        ids.ravel(), weights=alpha.ravel().astype(np.float64), minlength=len(tris) + 1
    )
    counts = np.bincount(ids.ravel(), minlength=len(tris) + 1)
    out = np.full(len(tris), 255.0)
    seen = counts[1:] > 0
    out[seen] = sums[1:][seen] / counts[1:][seen]
    return out


def fill_edges(identity: Identity) -> npt.NDArray[np.intp]:
    """(E, 2) point indices: mesh edges between an own and a filled triangle, off the
    face oval, the mouth's own triangles left out."""
    tris = np.asarray(identity.triangles)
    hidden = _LIPS if getattr(identity, "mouth_open", False) else _MOUTH
    shown = np.logical_not(hidden[tris].all(axis=1))
    filled = filled_triangles(identity)
    sides: dict[tuple[int, int], list[int]] = {}
    for t, (a, b, c) in enumerate(tris.tolist()):
        if not shown[t]:
            continue
        for u, v in ((a, b), (b, c), (c, a)):
            sides.setdefault((min(u, v), max(u, v)), []).append(t)
    edges = [
        key
        for key, ts in sides.items()
        if len(ts) == 2
        and filled[ts[0]] != filled[ts[1]]
        and not (_ON_OVAL[key[0]] and _ON_OVAL[key[1]])
    ]
    return np.array(edges, np.intp).reshape(-1, 2)


def _samples(
    starts: npt.NDArray[np.float64], ends: npt.NDArray[np.float64], spacing: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Points along segments ``starts -> ends`` about ``spacing`` apart, and the unit
    normal of each one's segment."""
    points, normals = [], []
    for a, b in zip(starts, ends, strict=True):
        d = b - a
        length = float(np.hypot(*d))
        if length < 1e-6:
            continue
        n = max(1, round(length / spacing))
        t = (np.arange(n) + 0.5) / n
        points.append(a + t[:, None] * d)
        normals.append(np.repeat([[-d[1] / length, d[0] / length]], n, axis=0))
    if not points:
        return np.zeros((0, 2)), np.zeros((0, 2))
    return np.concatenate(points), np.concatenate(normals)


def _lab(image: Image) -> npt.NDArray[np.float32]:
    scaled = np.asarray(image, np.float32) / np.float32(255.0)
    out: npt.NDArray[np.float32] = np.asarray(cv2.cvtColor(scaled, cv2.COLOR_BGR2Lab), np.float32)
    return out


def _side(
    lab: npt.NDArray[np.float32], points: npt.NDArray[np.float64], offsets: npt.NDArray[np.float64]
) -> npt.NDArray[np.float32]:
    """(S, 3) mean Lab over each sample's strip (``offsets``: (S, K, 2) from the sample)."""
    where = (points[:, None, :] + offsets).astype(np.float32)
    taps = cv2.remap(
        lab, where[..., 0], where[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
    )
    out: npt.NDArray[np.float32] = np.asarray(taps, np.float32).mean(axis=1)
    return out


def _steps(
    original: npt.NDArray[np.float32],
    swapped: npt.NDArray[np.float32],
    starts: npt.NDArray[np.float64],
    ends: npt.NDArray[np.float64],
    *,
    usable: Image,
    face_px: float,
) -> npt.NDArray[np.float64]:
    """Per sample along the segments whose strips lie in ``usable``: swapped step
    minus original step."""
    near = max(MIN_STRIP_PX[0], STRIP[0] * face_px)
    far = max(MIN_STRIP_PX[1], STRIP[1] * face_px)
    points, normals = _samples(starts, ends, max(1.0, SPACING * face_px))
    if not len(points):
        return np.zeros(0)
    across = np.linspace(near, far, STRIP_TAPS)
    plus = normals[:, None, :] * across[None, :, None]  # (S, K, 2)
    taps = np.concatenate([points[:, None, :] + plus, points[:, None, :] - plus], axis=1)
    cols = np.round(taps[..., 0]).astype(np.int64)
    rows = np.round(taps[..., 1]).astype(np.int64)
    height, width = usable.shape
    within = (cols >= 0) & (cols < width) & (rows >= 0) & (rows < height)
    ok = within.all(axis=1)
    ok[ok] = (usable[rows[ok], cols[ok]] > 0).all(axis=1)
    points, plus = points[ok], plus[ok]
    if not len(points):
        return np.zeros(0)
    steps = []
    for lab in (original, swapped):
        a, b = _side(lab, points, plus), _side(lab, points, -plus)
        steps.append(np.linalg.norm((a - b).astype(np.float64), axis=1))
    out: npt.NDArray[np.float64] = steps[1] - steps[0]
    return out


def _figure(values: npt.NDArray[np.float64]) -> float | None:
    if len(values) < MIN_SAMPLES:
        return None
    return float(np.percentile(values, PERCENTILE))


def midline_segments(mesh: Points) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The midline's segments (starts, ends), in the mesh's pixels."""
    xy = np.asarray(mesh, np.float64)[:, :2]
    pairs = [pair for chain in MIDLINE for pair in itertools.pairwise(chain)]
    index = np.array(pairs, np.intp)
    return xy[index[:, 0]], xy[index[:, 1]]


def _usable(shape: tuple[int, int], meshes: list[npt.NDArray[np.float64]], face_px: float) -> Image:
    """255 where a strip may lie: inside every mesh's face oval, off their eyes, brows
    and lips (grown by ``FEATURE_GROW`` face heights)."""
    inside = np.full(shape, 255, np.uint8)
    features = np.zeros(shape, np.uint8)
    for xy in meshes:
        oval = np.zeros(shape, np.uint8)
        cv2.fillPoly(oval, [np.round(xy[_OVAL]).astype(np.int32)], 255, cv2.LINE_8)
        inside = np.minimum(inside, oval)
        for ring in (RIGHT_EYE, LEFT_EYE, OUTER_LIPS):
            cv2.fillPoly(features, [np.round(xy[list(ring)]).astype(np.int32)], 255, cv2.LINE_8)
        for brow in (RIGHT_BROW, LEFT_BROW):
            hull = cv2.convexHull(np.round(xy[list(brow)]).astype(np.int32))
            cv2.fillConvexPoly(features, hull, 255, cv2.LINE_8)
    grow = max(1, round(FEATURE_GROW * face_px))
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * grow + 1, 2 * grow + 1))
    inside[cv2.dilate(features, kernel) > 0] = 0
    return inside


def fill_step(
    original: Image,
    swapped: Image,
    mesh: Points,
    edges: npt.NDArray[np.intp],
    *,
    visitor: Points | None = None,
    exclude: Box | None = None,
) -> FillStep:
    """The frame's fill step along the midline and along ``edges`` (``fill_edges``)
    of ``mesh`` (the mesh the swap drew), swapped against ``original``.

    ``visitor``: the visitor's own landmarks (their face oval bounds the samples
    too); ``exclude``: a box left out (the AI label).
    """
    xy = np.asarray(mesh, np.float64)[:, :2]
    face_px = float(np.ptp(xy[_OVAL, 1]))
    if face_px < 8.0:
        return FillStep(None, None)
    far = max(MIN_STRIP_PX[1], STRIP[1] * face_px)
    height, width = original.shape[:2]
    box = xy[_OVAL]
    if visitor is not None:
        box = np.concatenate([box, np.asarray(visitor, np.float64)[_OVAL, :2]])
    margin = int(np.ceil(far)) + 2
    x0 = max(0, int(np.floor(box[:, 0].min())) - margin)
    y0 = max(0, int(np.floor(box[:, 1].min())) - margin)
    x1 = min(width, int(np.ceil(box[:, 0].max())) + margin + 1)
    y1 = min(height, int(np.ceil(box[:, 1].max())) + margin + 1)
    if x1 - x0 < 4 or y1 - y0 < 4:
        return FillStep(None, None)
    shift = np.array((x0, y0), np.float64)
    meshes = [xy - shift]
    if visitor is not None:
        meshes.append(np.asarray(visitor, np.float64)[:, :2] - shift)
    usable = _usable((y1 - y0, x1 - x0), meshes, face_px)
    if exclude is not None:
        ex0, ey0, ex1, ey1 = exclude
        usable[max(0, ey0 - y0) : max(0, ey1 - y0), max(0, ex0 - x0) : max(0, ex1 - x0)] = 0
    lab_o = _lab(original[y0:y1, x0:x1])
    lab_s = _lab(swapped[y0:y1, x0:x1])
    local = xy - shift
    starts, ends = midline_segments(local)
    midline = _figure(_steps(lab_o, lab_s, starts, ends, usable=usable, face_px=face_px))
    edge = None
    if len(edges):
        edge = _figure(
            _steps(
                lab_o,
                lab_s,
                local[edges[:, 0]],
                local[edges[:, 1]],
                usable=usable,
                face_px=face_px,
            )
        )
    return FillStep(midline, edge)
