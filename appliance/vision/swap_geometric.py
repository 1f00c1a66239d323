"""The embedded geometric swapper: the enrolled face warped onto the visitor's mesh.

Per face: warp the identity's texture onto the target mesh over the face's
bounding box only (``mesh_warp``: a triangle-id map, one dense source map,
``cv2.remap``), match colour, and blend through a feathered mask that leaves
the visitor's own eyes and inner mouth.

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
from appliance.vision.identity import Identity
from appliance.vision.mesh import (
    FACE_OVAL,
    INNER_MOUTH,
    LEFT_EYE,
    OUTER_LIPS,
    RIGHT_EYE,
)
from appliance.vision.mesh_warp import SHIFT, fixed, map_step, warp_face
from appliance.vision.occlusion import occluders
from appliance.vision.relight import relight
from appliance.vision.thumbnail import thumbnail
from appliance.vision.types import FaceLandmarks, FloatArray

logger = logging.getLogger(__name__)

_MIN_FACE_PX = 12
_REGION_MARGIN = 4  # pixels around the face's box in ``swap_region``
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
            cv2.fillPoly(touched, [fixed(s_local[_OVAL, :2])], 255, cv2.LINE_8, SHIFT)
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
        warped, covered = warp_face(identity, local, step, roi, visitor=visitor, keep=in_front)
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
        cv2.fillPoly(mask, [fixed(local[_OVAL, :2])], 255, cv2.LINE_8, SHIFT)
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
                poly = [fixed(_grow(local[ring, :2], grow))]
                cv2.fillPoly(mask, poly, value, cv2.LINE_8, SHIFT)
        return mask


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
