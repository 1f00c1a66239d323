"""The piecewise-affine warp of a face mesh: a triangle-id map and dense source maps.

Rasterise the Delaunay triangles of the target mesh (far ones first, folded
ones dropped) into a triangle-id map over the face's box, turn it into one
dense source-coordinate map per source with each triangle's affine, and
``cv2.remap`` through it. A large face's maps are computed on a coarse grid
(``map_step``) and interpolated.
"""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.geometry2d import cross2
from appliance.vision.identity import Identity
from appliance.vision.triangulation import IntArray
from appliance.vision.types import FloatArray

Image = npt.NDArray[np.uint8]
SHIFT = 4  # sub-pixel bits for OpenCV polygon drawing
_ONE = 1 << SHIFT
_MAP_STEP = 2  # the finest coarse-grid step for the source map of a large face
MAP_STEP_MIN_PX = 96  # a face box narrower than this is mapped pixel by pixel
# the warp's coarse map has about this many cells down the face (map_step): the
# error of interpolating it is then the same share of the face at any size
MAP_CELLS = 80
_RING = np.ones((3, 3), np.uint8)


def fixed(points: FloatArray) -> npt.NDArray[np.int32]:
    """Points as OpenCV's fixed-point polygon vertices (``SHIFT`` fractional bits)."""
    return np.round(points * _ONE).astype(np.int32)


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
    for poly, value in zip(list(fixed(dst_t[order])), (order + 1).tolist(), strict=True):
        fill(ids, poly, value, cv2.LINE_8, SHIFT)
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


def warp_face(
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
    if min(size) < MAP_STEP_MIN_PX:
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
