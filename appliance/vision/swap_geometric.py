"""The embedded geometric swapper: the enrolled face warped onto the visitor's mesh.

Per face: rasterise the Delaunay triangles of the target mesh (far ones
first, folded ones dropped) into a triangle-id map over the face's bounding
box only, turn it into one dense source-coordinate map with each triangle's
affine, ``cv2.remap`` the identity's texture through it, match colour, and
blend through a feathered mask that leaves the visitor's own eyes and inner
mouth.

The target mesh is the visitor's own landmarks, or (shape transfer) a mesh
with the identity's proportions that meets the visitor's outline. In that
case the visitor's face inside the outline is first moved onto the target
mesh too (the same triangles, a second map), so their own eyes and mouth
show where the target has them and nothing tears at the outline.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from appliance.config import SwapSettings
from appliance.timing import add_stage_ms
from appliance.vision.blend import (
    ColourMemory,
    alpha_blend,
    face_thumbs,
    feather,
    match_colour,
    poisson_blend,
)
from appliance.vision.detail import match_detail
from appliance.vision.eye_handover import own_eyes_now
from appliance.vision.gaze import draw_irises, follow_gaze
from appliance.vision.geometry2d import cross2
from appliance.vision.identity import Identity
from appliance.vision.mesh import (
    FACE_OVAL,
    INNER_MOUTH,
    LEFT_EYE,
    OUTER_LIPS,
    RIGHT_EYE,
)
from appliance.vision.occlusion import occluders
from appliance.vision.relight import relight
from appliance.vision.thumbnail import thumbnail
from appliance.vision.triangulation import IntArray
from appliance.vision.types import FaceLandmarks, FloatArray

logger = logging.getLogger(__name__)

_SHIFT = 4  # sub-pixel bits for OpenCV polygon drawing
_ONE = 1 << _SHIFT
_MIN_FACE_PX = 12
_REGION_MARGIN = 4  # pixels around the face's box in ``swap_region``
_MAP_STEP = 2  # the finest coarse-grid step for the source map of a large face
_MAP_STEP_MIN_PX = 96  # a face box narrower than this is mapped pixel by pixel
# the warp's coarse map has about this many cells down the face (map_step): the
# error of interpolating it is then the same share of the face at any size
MAP_CELLS = 80
_RING = np.ones((3, 3), np.uint8)
_OVAL = np.array(FACE_OVAL)
_HOLES = {"eyes": (np.array(RIGHT_EYE), np.array(LEFT_EYE)), "mouth": (np.array(INNER_MOUTH),)}
_LIPS = np.array(OUTER_LIPS)  # an open-mouthed identity's lips are unusable: the visitor's show

Image = npt.NDArray[np.uint8]
# a face taller than this (its outline, in pixels) is swapped at this height and
# scaled back: the identity's texture has at most MAX_TEXTURE_SIDE pixels for the
# whole face and its margin, so a larger warp adds cost, not detail (a 1280x720
# close-up: 550-700 px; 640x480 faces are 150-300)
WORK_FACE_PX = 384


@dataclass(frozen=True)
class _Work:
    """What one face's swap needs besides its ROI and points."""

    identity: Identity
    moved: bool  # shape transfer: the visitor's face is moved onto the target mesh
    timings: dict[str, float]
    start: float  # perf_counter when the swap began
    strength: float
    colour: ColourMemory | None
    own_eyes: tuple[float, float]


class GeometricSwapper:
    name = "geometric"

    def __init__(self, settings: SwapSettings) -> None:
        self.settings = settings

    def swap(
        self,
        frame: Image,
        face: FaceLandmarks,
        identity: Identity,
        timings_ms: dict[str, float] | None = None,
        *,
        strength: float = 1.0,
        target: FloatArray | None = None,
        colour: ColourMemory | None = None,
        own_eyes: tuple[float, float] | None = None,
    ) -> bool:
        """Swap one face in place; False when nothing was changed (face off-frame or tiny).

        ``target``: the mesh (478, 3, image pixels) to give the swapped face;
        the visitor's own landmarks when None. ``colour``: this face's colour
        transform across frames (eased, so it does not flicker). ``own_eyes``:
        how much of the visitor's own right and left eye shows (0 to 1); from
        the eyes' openness and ``settings.eyes`` when None.
        """
        timings = {} if timings_ms is None else timings_ms
        t0 = time.perf_counter()
        if target is not None:  # the identity's proportions, the visitor's gaze
            target = follow_gaze(target, face.points)
        points = face.points if target is None else target
        box = _face_box(points, frame.shape)
        if box is None:
            return False
        x0, y0, x1, y1 = box
        local = points.copy()
        local[:, :2] -= (x0, y0)
        roi = frame[y0:y1, x0:x1]
        own = face.points[:, :2] - np.array((x0, y0), np.float32)
        if own_eyes is None:
            own_eyes = own_eyes_now(face.points, self.settings.eyes)
        face_px = float(np.ptp(local[_OVAL, 1]))
        work = _Work(identity, target is not None, timings, t0, strength, colour, own_eyes)
        if face_px <= WORK_FACE_PX:
            return bool(self._swap_roi(roi, local, own, work).any())
        return self._swap_scaled(roi, local, own, work, WORK_FACE_PX / face_px)

    def _swap_scaled(
        self, roi: Image, local: FloatArray, own: FloatArray, work: _Work, scale: float
    ) -> bool:
        """The swap of a large face done on the ROI scaled by ``scale`` and scaled back:
        the identity's texture has at most ``MAX_TEXTURE_SIDE`` pixels of detail, and
        every step costs by the pixel."""
        h, w = roi.shape[:2]
        size = (max(1, round(w * scale)), max(1, round(h * scale)))
        factors = np.array((size[0] / w, size[1] / h), np.float32)
        small = np.array(thumbnail(roi, size), np.uint8)  # its own copy
        s_local = local.copy()
        s_local[:, :2] = (local[:, :2] + 0.5) * factors - 0.5
        s_local[:, 2] *= factors[0]
        s_own = (own + 0.5) * factors - 0.5
        alpha = self._swap_roi(small, s_local, s_own, work)
        if not alpha.any():
            return False
        t1 = time.perf_counter()
        # what the swap changed: the identity (alpha) and, with shape transfer, the
        # visitor's face moved inside the outline; scaled back over the full-size ROI
        touched = np.where(alpha > 0, 255, 0).astype(np.uint8)
        if work.moved:
            cv2.fillPoly(touched, [_fixed(s_local[_OVAL, :2])], 255, cv2.LINE_8, _SHIFT)
        # copied, not blended: at its edge the scaled-back ROI is the visitor's own
        # unchanged face (an alpha blend of the whole ROI cost 3 ms at 560x650)
        inside = np.asarray(cv2.resize(touched, (w, h), interpolation=cv2.INTER_NEAREST), np.uint8)
        up = np.asarray(cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR), np.uint8)
        cv2.copyTo(up, inside, roi)  # in place
        add_stage_ms(work.timings, "blend", t1)
        return True

    def _swap_roi(self, roi: Image, local: FloatArray, own: FloatArray, work: _Work) -> Image:
        """Swap the face in ``roi`` (in place; its mesh ``local``, the visitor's own
        landmarks ``own``, both in ROI pixels); returns the blend's alpha."""
        identity, timings = work.identity, work.timings
        size = (roi.shape[1], roi.shape[0])
        face_px = float(np.ptp(local[_OVAL, 1]))
        # the frame's own detail, before the visitor's face is moved (a resampling)
        as_seen = roi.copy() if work.moved else roi
        in_front = occluders(roi, own) if self.settings.keep_occluders else None
        visitor = own if work.moved else None
        step = map_step(face_px, size)
        warped, covered = _warp_face(identity, local, step, roi, visitor=visitor, keep=in_front)
        t1 = add_stage_ms(timings, "warp", work.start)
        if identity.irises is not None:  # the identity's irises, the visitor's gaze
            draw_irises(warped, local, identity.irises)
            t1 = add_stage_ms(timings, "gaze", t1)
        mask = self._mask(local, covered, size, identity, work.own_eyes)
        if in_front is not None:
            mask[in_front > 0] = 0
        colour = work.colour
        if self.settings.color_match:
            thumbs = face_thumbs(warped, roi, mask)
            warped = match_colour(warped, roi, mask, colour, thumbs)
            t1 = add_stage_ms(timings, "colour", t1)
            ease = None if colour is None else colour.ease_shading
            warped = relight(
                warped, thumbs.visitor, mask, face_px, ease, warped_small=thumbs.warped
            )
            t1 = add_stage_ms(timings, "relight", t1)
        eases = None if colour is None else (colour.ease_detail, colour.ease_grain)
        warped = match_detail(warped, as_seen, mask, eases)
        t1 = add_stage_ms(timings, "detail", t1)
        alpha = feather(mask, int(face_px * self.settings.feather_fraction))
        if work.strength < 1.0:
            alpha = (alpha.astype(np.float32) * max(0.0, work.strength)).astype(np.uint8)
        if self.settings.blend == "poisson":
            poisson_blend(roi, warped, alpha)
        else:
            alpha_blend(roi, warped, alpha)
        add_stage_ms(timings, "blend", t1)
        return alpha

    def _mask(
        self,
        local: FloatArray,
        covered: Image,
        size: tuple[int, int],
        identity: Identity,
        own_eyes: tuple[float, float],
    ) -> Image:
        """Where the identity's face goes (255), with holes where the visitor's own eyes
        (as they close) and inner mouth show through."""
        mask = np.zeros((size[1], size[0]), np.uint8)
        cv2.fillPoly(mask, [_fixed(local[_OVAL, :2])], 255, cv2.LINE_8, _SHIFT)
        mask[covered == 0] = 0
        rings: list[tuple[npt.NDArray[np.int_], float, float]] = []  # ring, growth, keep
        for ring, own in zip(_HOLES["eyes"], own_eyes, strict=True):
            rings.append((ring, 1.25, own))
        if self.settings.keep_mouth:
            rings.append((_HOLES["mouth"][0], 1.25, 1.0))
            if identity.mouth_open:
                rings.append((_LIPS, 1.1, 1.0))
        for ring, grow, keep in rings:
            if keep > 0:
                value = round(255 * (1.0 - keep))
                poly = [_fixed(_grow(local[ring, :2], grow))]
                cv2.fillPoly(mask, poly, value, cv2.LINE_8, _SHIFT)
        return mask


def _fixed(points: FloatArray) -> npt.NDArray[np.int32]:
    return np.round(points * _ONE).astype(np.int32)


def _grow(ring: FloatArray, factor: float) -> FloatArray:
    centre = ring.mean(axis=0)
    out: FloatArray = (ring - centre) * factor + centre
    return out


def _face_box(points: FloatArray, shape: tuple[int, ...]) -> tuple[int, int, int, int] | None:
    xy = points[_OVAL, :2]
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    if float((hi - lo).min()) < _MIN_FACE_PX:
        return None
    pad = 2
    h, w = shape[:2]
    x0, y0 = max(0, int(lo[0]) - pad), max(0, int(lo[1]) - pad)
    x1, y1 = min(w, int(hi[0]) + pad + 1), min(h, int(hi[1]) + pad + 1)
    if x1 - x0 < _MIN_FACE_PX or y1 - y0 < _MIN_FACE_PX:
        return None
    return x0, y0, x1, y1


def swap_region(points: FloatArray, shape: tuple[int, ...]) -> tuple[int, int, int, int] | None:
    """The part of a frame (x0, y0, x1, y1) the swap of a face with the mesh ``points``
    (the target mesh, or the visitor's landmarks) reads and writes, with a margin; None
    for a face too small to swap. The swap of that part alone (``points`` moved with it)
    finds the same box in it: the margin keeps its edges off the box's."""
    box = _face_box(points, shape)
    if box is None:
        return None
    x0, y0, x1, y1 = box
    h, w = shape[:2]
    margin = _REGION_MARGIN
    return max(0, x0 - margin), max(0, y0 - margin), min(w, x1 + margin), min(h, y1 + margin)


def _rasterise(
    dst: FloatArray, depth: FloatArray, identity: Identity, size: tuple[int, int]
) -> npt.NDArray[np.uint16]:
    """Triangle id + 1 per pixel (0 = none); near triangles drawn last, folded ones skipped."""
    tris = identity.triangles
    dst_t = dst[tris]
    src = identity.texture_points[tris]
    dst_area = cross2(dst_t[:, 1] - dst_t[:, 0], dst_t[:, 2] - dst_t[:, 0])
    src_area = cross2(src[:, 1] - src[:, 0], src[:, 2] - src[:, 0])
    visible = (np.sign(dst_area) == np.sign(src_area)) & (np.abs(dst_area) > 0.05)
    order = np.flatnonzero(visible)
    order = order[np.argsort(-depth[tris].mean(axis=1)[order], kind="stable")]
    ids = np.zeros((size[1], size[0]), np.uint16)
    # the polygons and their ids made up front, so the loop is only the OpenCV calls
    # (0.9 against 1.0 ms a face, the same ids)
    fill = cv2.fillConvexPoly
    for poly, value in zip(list(_fixed(dst_t[order])), (order + 1).tolist(), strict=True):
        fill(ids, poly, value, cv2.LINE_8, _SHIFT)
    return ids


def _affines(sources: list[FloatArray], dst_xy: FloatArray, tris: IntArray) -> FloatArray:
    """Per triangle, the affines from destination (ROI) pixels to each source's pixels.

    (T, 3, 2 * len(sources)): ``[x y 1] @ out[t]`` is every source's (x, y) in turn.
    Closed form through the barycentric coordinates (a degenerate triangle gets
    a huge but finite affine; it is never drawn).
    """
    dst = dst_xy[tris].astype(np.float64)  # (T, 3, 2)
    p0, e1, e2 = dst[:, 0], dst[:, 1] - dst[:, 0], dst[:, 2] - dst[:, 0]
    det = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]
    det = np.where(np.abs(det) < 1e-9, 1e-9, det)
    # u and v (the weights of vertices 1 and 2) as [x y 1] @ (3,) per triangle
    u = np.stack([e2[:, 1], -e2[:, 0], p0[:, 1] * e2[:, 0] - p0[:, 0] * e2[:, 1]], 1)
    v = np.stack([-e1[:, 1], e1[:, 0], p0[:, 0] * e1[:, 1] - p0[:, 1] * e1[:, 0]], 1)
    u /= det[:, None]
    v /= det[:, None]
    src = np.concatenate([s[tris].astype(np.float64) for s in sources], axis=2)  # (T, 3, 2k)
    out = (
        u[:, :, None] * (src[:, 1] - src[:, 0])[:, None]
        + v[:, :, None] * (src[:, 2] - src[:, 0])[:, None]
    )
    out[:, 2] += src[:, 0]
    affines: FloatArray = out.astype(np.float32)
    return affines


def _warp_face(
    identity: Identity,
    local: FloatArray,
    step: int,
    roi: Image,
    *,
    visitor: FloatArray | None = None,
    keep: Image | None = None,
) -> tuple[Image, Image]:
    """The identity texture warped onto the ROI, and where any triangle covers it.

    With ``visitor`` (the visitor's own landmarks in ROI pixels) the ROI itself
    is first moved, in place, from those landmarks onto ``local``, except
    where ``keep`` is set (what is in front of the face stays put).

    The piecewise-affine map is continuous, so it is computed on a grid
    ``step`` times coarser (``map_step``) and interpolated: the texture is
    still sampled once per output pixel. The coarse map runs one cell past the
    mesh (each outside cell takes a neighbouring triangle's affine), so the
    interpolation at the outline does not blend in the "no source" marks.
    """
    size = (roi.shape[1], roi.shape[0])
    grid = (-(-size[0] // step), -(-size[1] // step))
    dst = ((local[:, :2] + 0.5) / step - 0.5).astype(np.float32)
    ids = _rasterise(dst, local[:, 2], identity, grid)
    sources = [identity.texture_points] + ([visitor] if visitor is not None else [])
    ringed = ids if step == 1 else np.where(ids > 0, ids, cv2.dilate(ids, _RING))
    maps = _maps(sources, dst, identity.triangles, ringed)
    full_ids = _sized_ids(ids, size, step)
    if visitor is not None:
        _move_visitor(roi, ids, full_ids, maps[1], step=step, keep=keep)
    tex_x, tex_y = maps[0]
    if step > 1:
        tex_x, tex_y = _upscale(tex_x, size, step), _upscale(tex_y, size, step)
    covered: Image = (full_ids > 0).astype(np.uint8)
    texture = identity.texture if identity.texture_bgra is None else identity.texture_bgra
    warped: Image = np.asarray(
        cv2.remap(texture, tex_x, tex_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE),
        np.uint8,
    )
    if warped.shape[2] == 4:  # where the identity's own face was covered, it is not used
        covered = np.minimum(covered, (warped[..., 3] > 127).astype(np.uint8))
        warped = np.asarray(cv2.cvtColor(warped, cv2.COLOR_BGRA2BGR), np.uint8)
    return warped, covered


def _move_visitor(
    roi: Image,
    ids: npt.NDArray[np.uint16],
    full_ids: npt.NDArray[np.uint16],
    coarse: tuple[FloatArray, FloatArray],
    *,
    step: int,
    keep: Image | None,
) -> None:
    """Move the ROI's own pixels (in place) by the coarse visitor map (``step`` ROI pixels
    per cell); outside the mesh, and where ``keep`` is set, the visitor's image stays."""
    size = (roi.shape[1], roi.shape[0])
    outside = ids == 0
    gy, gx = np.nonzero(outside)
    map_x, map_y = coarse
    map_x[outside] = (gx + 0.5) * step - 0.5
    map_y[outside] = (gy + 0.5) * step - 0.5
    if step > 1:
        map_x, map_y = _upscale(map_x, size, step), _upscale(map_y, size, step)
    moved = cv2.remap(roi, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    where = full_ids > 0
    if keep is not None:
        where &= keep == 0
    cv2.copyTo(np.asarray(moved, np.uint8), where.astype(np.uint8), roi)  # in place


def _sized_ids(
    ids: npt.NDArray[np.uint16], size: tuple[int, int], step: int
) -> npt.NDArray[np.uint16]:
    """The coarse triangle-id map at the ROI's ``size`` (each cell repeated)."""
    if step == 1:
        return ids
    full = cv2.resize(ids, _whole_cells(ids, step), interpolation=cv2.INTER_NEAREST)
    return np.asarray(full[: size[1], : size[0]], np.uint16)


def _whole_cells(grid: npt.NDArray[np.generic], step: int) -> tuple[int, int]:
    """The size ``grid`` covers in whole cells of ``step`` pixels (at least the ROI's):
    the resize to it puts each cell's centre where the coarse map took it."""
    return grid.shape[1] * step, grid.shape[0] * step


def map_step(face_px: float, size: tuple[int, int]) -> int:
    """ROI pixels per cell of the warp's coarse map: about ``MAP_CELLS`` cells down the
    face (never under ``_MAP_STEP``); 1 (exact) for small faces."""
    if min(size) < _MAP_STEP_MIN_PX:
        return 1
    return max(_MAP_STEP, round(face_px / MAP_CELLS))


def _upscale(coarse: FloatArray, size: tuple[int, int], step: int) -> FloatArray:
    """A coarse map at the ROI's ``size`` (bilinear between the cells' centres)."""
    full = cv2.resize(coarse, _whole_cells(coarse, step), interpolation=cv2.INTER_LINEAR)
    return np.asarray(full[: size[1], : size[0]], np.float32)


def _maps(
    sources: list[FloatArray], dst_xy: FloatArray, tris: IntArray, ids: npt.NDArray[np.uint16]
) -> list[tuple[FloatArray, FloatArray]]:
    """Per source, per pixel, its coordinates by the pixel's triangle affine (-1 where none)."""
    affines = _affines(sources, dst_xy, tris)
    h, w = ids.shape
    planes = np.full((affines.shape[2], h, w), -1.0, np.float32)
    ys, xs = np.nonzero(ids)
    if ys.size:
        m = affines[ids[ys, xs].astype(np.intp) - 1]  # (N, 3, 2k)
        fx, fy = xs.astype(np.float32)[:, None], ys.astype(np.float32)[:, None]
        planes[:, ys, xs] = (m[:, 0] * fx + m[:, 1] * fy + m[:, 2]).T
    return [(planes[2 * i], planes[2 * i + 1]) for i in range(len(sources))]
