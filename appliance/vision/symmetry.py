"""A turned identity photo completed from its own mirror image (done once, at enrollment).

The face is rotated to look straight ahead: the 3-D rotation that takes the
mesh onto its own mirror image (``MIRROR``: each point's left/right partner,
x negated) is twice the head's yaw and roll, so half of it undoes them.
The texture is redrawn in that frontal layout, triangle by triangle, twice:
from the photo itself and from the mirrored partner triangles. Each triangle's
visibility (its area in the photo over its area seen from the front) decides
the blend: where the photo saw the partner much better and this triangle
poorly (``SEEN_POORLY``), the partner's pixels are used; where neither side
was seen (edge-on in the photo), the texture is transparent, so the visitor's
own face shows there instead of a stretched smear; so is a poorly seen part
whose mirror side is not skin (``REFUSE_BELOW``: a hand at the far cheek).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.geometry2d import cross2
from appliance.vision.pose3d import similarity
from appliance.vision.triangulation import IntArray
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

# The mesh's own midline points; every other point below 248 pairs, in order,
# with the points 248-467 (the MediaPipe topology is laid out that way); the
# irises pair centre with centre and ring point with its mirror.
_MIDLINE = frozenset((0, 1, 2, 4, 5, 6, *range(8, 20), 94, 151, 152, 164, 168, 175))
_MIDLINE |= frozenset((195, 197, 199, 200))
_IRIS_PAIRS = ((468, 473), (469, 476), (470, 475), (471, 474), (472, 477))


def _mirror_table() -> npt.NDArray[np.intp]:
    table = np.arange(478)
    right = [i for i in range(248) if i not in _MIDLINE]
    for a, b in [*zip(right, range(248, 468), strict=True), *_IRIS_PAIRS]:
        table[a], table[b] = b, a
    return table


MIRROR = _mirror_table()  # MIRROR[i]: the point that mirrors point i across the face's midline

SEEN_WELL = 0.3  # visibility gap over which the better-seen side takes over
# only a triangle the photo sees poorly is completed: fully below the first own
# visibility, not at all from the second (a nearly frontal photo keeps its own,
# asymmetric features: a mirrored half reads as someone else)
SEEN_POORLY = (0.55, 0.8)
UNSEEN = (0.12, 0.3)  # visibility below the first: not used; fully used above the second
BLEND_SIGMA = 0.05  # own/mirror shares are smoothed this far (share of the texture size)
# own visibility (smoothed like the shares) under which neither side may be used:
# fully under the first, not from the second
REFUSE_BELOW = (0.45, 0.7)
MIN_CHROMA = 6.0  # a face with less chroma (Cr + Cb off grey) is a black-and-white photo
SKIN_CHROMA = (8.0, 16.0)  # chroma distance from the face's skin: the same up to, not skin from
MARGIN = 0.12  # texture margin around the frontal face, as a share of its size


@dataclass(frozen=True)
class Completed:
    texture_bgra: npt.NDArray[np.uint8]  # the frontal texture; alpha 0 where nothing usable
    uv: FloatArray  # (478, 2): the mesh in that texture's pixels
    visibility: FloatArray  # (T,): per triangle, how well the used pixels were seen (0-1)
    mirrored: FloatArray  # (T,): per triangle, the share taken from the mirrored side


def frontal_rotation(points: FloatArray) -> npt.NDArray[np.float64]:
    """The rotation (3, 3) that turns the face to look straight at the camera (yaw, roll)."""
    xyz = np.asarray(points[:, :3], np.float64)
    mirrored = xyz[MIRROR] * np.array([-1.0, 1.0, 1.0])
    twice = similarity(xyz, mirrored).rotation
    vector, _ = cv2.Rodrigues(twice)
    half_vector: npt.NDArray[np.float64] = np.asarray(vector, np.float64) * 0.5
    half, _ = cv2.Rodrigues(half_vector)
    return np.asarray(half, np.float64)


def yaw_degrees_of(points: FloatArray) -> float:
    """The head's turn about the vertical axis in the photo, in degrees (sign: image x)."""
    rotation = frontal_rotation(points)
    return float(np.degrees(np.arctan2(rotation[0, 2], rotation[0, 0])))


def _areas(xy: FloatArray, tris: IntArray) -> FloatArray:
    t = xy[tris]
    out: FloatArray = cross2(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]).astype(np.float32)
    return out


def triangle_visibility(photo: FloatArray, frontal: FloatArray, tris: IntArray) -> FloatArray:
    """Per triangle, its area in the photo over its area seen from the front (0-1)."""
    front = _areas(frontal, tris)
    ratio = _areas(photo, tris) / np.where(np.abs(front) < 1e-6, 1e-6, front)
    out: FloatArray = np.clip(ratio, 0.0, 1.0).astype(np.float32)
    return out


def photo_visibility(points: FloatArray, tris: IntArray, max_side: int) -> FloatArray:
    """Per triangle, how well the photo itself sees it (``triangle_visibility``)."""
    uv, scale, _ = _frontal(points, max_side)
    return triangle_visibility(points[:, :2].astype(np.float32), uv / scale, tris)


def triangle_ids(
    uv: npt.NDArray[np.floating], tris: npt.NDArray[np.integer], size: tuple[int, int]
) -> npt.NDArray[np.int32]:
    """An image of ``size`` (w, h) holding at each pixel 1 + the index of the triangle
    of ``uv`` drawn there (0: none)."""
    ids = np.zeros((size[1], size[0]), np.int32)
    corners = np.round(np.asarray(uv, np.float64)[:, :2][tris] * 16).astype(np.int32)
    for t in range(len(tris)):
        cv2.fillConvexPoly(ids, corners[t], t + 1, cv2.LINE_8, 4)
    return ids


def _map(
    uv: FloatArray,
    src: FloatArray,
    tris: IntArray,
    ids: npt.NDArray[np.int32],
    src_tris: IntArray | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Per pixel of the uv layout (triangles ``tris``), the photo coordinates through the
    affine that takes each triangle onto ``src_tris``' triangle in the photo (the same
    triangle when None; its mirror partner for the mirrored side, a flip)."""
    dst = np.concatenate([uv[tris].astype(np.float64), np.ones((len(tris), 3, 1))], axis=2)
    dst[np.abs(np.linalg.det(dst)) < 1e-9] += np.eye(3) * 1e-3
    corners = src[tris if src_tris is None else src_tris].astype(np.float64)
    affine = np.linalg.solve(dst, corners).astype(np.float32)
    map_x = np.full(ids.shape, -1.0, np.float32)
    map_y = np.full(ids.shape, -1.0, np.float32)
    ys, xs = np.nonzero(ids)
    m = affine[ids[ys, xs] - 1]
    fx, fy = xs.astype(np.float32), ys.astype(np.float32)
    map_x[ys, xs] = m[:, 0, 0] * fx + m[:, 1, 0] * fy + m[:, 2, 0]
    map_y[ys, xs] = m[:, 0, 1] * fx + m[:, 1, 1] * fy + m[:, 2, 1]
    return map_x, map_y


def _frontal(points: FloatArray, max_side: int) -> tuple[FloatArray, float, tuple[int, int]]:
    """The mesh seen from the front in texture pixels, its scale from the photo's, the size."""
    xyz = np.asarray(points[:, :3], np.float64)
    centre = xyz.mean(axis=0)
    front = (xyz - centre) @ frontal_rotation(points).T
    xy = front[:, :2]
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    margin = (hi - lo) * MARGIN
    scale = min(1.0, max_side / float((hi - lo + 2 * margin).max()))
    uv: FloatArray = ((xy - lo + margin) * scale).astype(np.float32)
    width, height = np.ceil((hi - lo + 2 * margin) * scale).astype(int)
    return uv, scale, (int(width), int(height))


def complete(
    texture_bgra: npt.NDArray[np.uint8], points: FloatArray, tris: IntArray, max_side: int
) -> Completed:
    """The frontal, mirror-completed texture of a face photographed at any yaw."""
    uv, scale, size = _frontal(points, max_side)
    photo = points[:, :2].astype(np.float32)
    front = uv / scale
    own_vis = triangle_visibility(photo, front, tris)
    mirror_tris: IntArray = np.asarray(MIRROR[tris], np.int32)
    # the partner triangle, seen in the photo, drawn at this triangle's place (flipped)
    flipped = photo[MIRROR] * np.array([-1.0, 1.0], np.float32)
    mirror_vis = triangle_visibility(flipped, front, tris)
    share = np.clip((mirror_vis - own_vis) / SEEN_WELL, 0.0, 1.0)
    poorly = (SEEN_POORLY[1] - own_vis) / (SEEN_POORLY[1] - SEEN_POORLY[0])
    share = (share * np.clip(poorly, 0.0, 1.0)).astype(np.float32)
    ids = triangle_ids(uv, tris, size)
    own = _sample(texture_bgra, _map(uv, photo, tris, ids))
    other = _sample(texture_bgra, _map(uv, photo, tris, ids, mirror_tris))
    inside = ids > 0
    per_pixel = np.where(inside, share[ids - 1], 0.0).astype(np.float32)
    # triangle by triangle the shares are noisy (a patchwork of own and mirrored
    # pieces on a turned cheek): they are smoothed over a good part of the cheek
    sigma = max(1.0, BLEND_SIGMA * max(size))
    blend = _smooth(per_pixel, inside, sigma)
    own_alpha = own[..., 3].astype(np.float32) / 255.0
    other_alpha = other[..., 3].astype(np.float32) / 255.0
    # what covers the mirror side (hair at the far contour) is not used; where the
    # own side is covered (a hand), the mirror fills in
    other_ok = other_alpha * _skin_like(other[..., :3], own[..., :3], inside)
    other_ok = np.asarray(cv2.erode(other_ok, np.ones((5, 5), np.uint8)), np.float32)  # no edges
    other_ok = np.asarray(_smooth(other_ok, inside, 1.5), np.float32)
    # where the photo sees its own side too poorly and the mirror side is not skin
    # either, neither is used (the visitor's own face shows): what the photo shows
    # at its far contour is often not the face (a hand at the chin, hair)
    own_px = _smooth(np.where(inside, own_vis[ids - 1], 0.0).astype(np.float32), inside, sigma)
    edge_on = np.clip((REFUSE_BELOW[1] - own_px) / (REFUSE_BELOW[1] - REFUSE_BELOW[0]), 0.0, 1.0)
    refused = blend * (1.0 - other_ok) * edge_on
    blend = blend * other_ok
    blend = np.where((own_alpha < 0.5) & (other_alpha >= 0.5), 1.0, blend)
    seen = (1.0 - share) * own_vis + share * mirror_vis
    seen_px = np.where(inside, seen[ids - 1], 0.0).astype(np.float32)
    usable = np.clip((seen_px - UNSEEN[0]) / (UNSEEN[1] - UNSEEN[0]), 0.0, 1.0)
    usable = _smooth(usable, inside, max(1.0, 0.015 * max(size)))
    colour = own[..., :3] * (1.0 - blend[..., None]) + other[..., :3] * blend[..., None]
    alpha = (own_alpha * (1.0 - blend) + other_alpha * blend) * usable * (1.0 - refused) * inside
    out = np.dstack([colour, alpha * 255.0]).round().clip(0, 255).astype(np.uint8)
    logger.info(
        "identity texture completed: yaw %.0f deg, %.0f%% of the face from its mirror side",
        yaw_degrees_of(points),
        100.0 * float(share.mean()),
    )
    return Completed(np.ascontiguousarray(out), uv, seen.astype(np.float32), share)


def _skin_like(
    image: npt.NDArray[np.float32],
    reference: npt.NDArray[np.float32],
    inside: npt.NDArray[np.bool_],
) -> npt.NDArray[np.float32]:
    """1 where ``image`` has the face's skin colour (``reference``'s median chroma), 0 far off.

    Hair or background past the far contour are not always found as occluders;
    mirrored onto the near cheek they would show as grey or dark pieces. A
    black-and-white photo has no chroma to tell them apart: all 1 then.
    """

    def chroma(pixels: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        ycc = cv2.cvtColor(np.clip(pixels, 0, 255).astype(np.uint8), cv2.COLOR_BGR2YCrCb)
        return ycc[..., 1:].astype(np.float32) - 128.0

    ref = np.median(chroma(reference)[inside], axis=0)
    if float(np.abs(ref).sum()) < MIN_CHROMA:
        return np.ones(image.shape[:2], np.float32)
    distance = np.linalg.norm(chroma(image) - ref, axis=2)
    out: npt.NDArray[np.float32] = np.clip(
        (SKIN_CHROMA[1] - distance) / (SKIN_CHROMA[1] - SKIN_CHROMA[0]), 0.0, 1.0
    ).astype(np.float32)
    return out


def _smooth(values: FloatArray, inside: npt.NDArray[np.bool_], sigma: float) -> FloatArray:
    """``values`` blurred over the face only (outside pixels do not pull the edge down)."""
    weight = inside.astype(np.float32)
    total = cv2.GaussianBlur(values * weight, (0, 0), sigma)
    norm = cv2.GaussianBlur(weight, (0, 0), sigma)
    out: FloatArray = np.where(inside, total / np.maximum(norm, 1e-3), 0.0).astype(np.float32)
    return out


def _sample(
    texture: npt.NDArray[np.uint8], maps: tuple[FloatArray, FloatArray]
) -> npt.NDArray[np.float32]:
    sampled = cv2.remap(texture, maps[0], maps[1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    return np.asarray(sampled, np.float32)
