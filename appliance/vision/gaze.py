"""Gaze follows the visitor: the identity's irises drawn where the visitor's are.

At enrollment each iris of the identity's texture is cut out as a disc (the
part of it the photo's own lid covers kept as that lid, what hair or a hand
covers filled from the disc's other half)
and the eye opening under it is filled with the eye's white, so the texture
has bare eyes. Per frame, each disc is drawn at the target mesh's iris
centre (``follow_gaze``: where the visitor's iris sits between the eye's
corners), scaled and turned with the eye, and clipped to the eye opening (the
lids): the identity's eye colour and shape, the visitor's gaze. Blinks stay
with the swapper's mask (the visitor's own eye shows as it closes).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.mesh import LEFT_EYE, RIGHT_EYE
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

Image = npt.NDArray[np.uint8]

# per eye: the eye opening, its outer and inner corner, the iris centre and ring
EYES = (
    (RIGHT_EYE, 33, 133, (468, 469, 470, 471, 472)),
    (LEFT_EYE, 263, 362, (473, 474, 475, 476, 477)),
)
LIDS = ((159, 145), (386, 374))  # per eye: the upper and the lower lid's middle
MIN_RADIUS_PX = 1.5  # a smaller iris in the photo is not cut out
# the visible iris, with its dark rim, over the mesh's iris ring: cut at the ring
# itself, the drawn iris was smaller than the photo's, inside a pale halo of
# painted eye white (a staring look: d_src 0.50 against 0.475 with the photo's eyes);
# 1.2 read as a larger, paler iris (gaze error 8.1 for the open-mouthed man)
IRIS_SCALE = 1.1
IRIS_FADE = 0.5  # the share of the disc past the ring over which it fades out
BARE_RADIUS = 1.35  # the iris and its dark rim are painted over this far out
# the eye white's colour: the palest WHITE_SHARE of the opening past WHITE_FROM iris
# radii (the drawn iris's rim ends at IRIS_SCALE). From past BARE_RADIUS, the palest
# 30%, a photo whose whites show only at the eye's shadowed corners (a deep-set eye:
# the open-mouthed man) gave a white darker than his skin and as dark as his pale
# iris: moved aside, the drawn iris was lost in it (gaze error 11.8 on the talking man)
WHITE_FROM = 1.15
WHITE_SHARE = 0.1
LID_SHADE = 0.85  # the eye white's brightness at the lids, over its middle (was 0.7)
FORESHORTENED = 0.8  # an eye this much narrower than the other takes its iris
SQUASH_MIN = 0.15  # the flattest a closing eye makes its iris
MIN_SEEN = 0.35  # share of the iris disc the photo must show (eyes open)
_MARGIN = 1.3  # the patch around the disc, in iris radii
_SHIFT = 4
_ONE = 1 << _SHIFT


@dataclass(frozen=True)
class IrisPatch:
    """One eye's iris cut from the identity texture: BGRA, alpha the disc."""

    image: Image  # (2R+1, 2R+1, 4), the iris centre at (R, R)
    radius: float  # the iris radius in texture pixels
    axis: complex  # the eye's outer-to-inner corner vector in texture pixels
    openness: float  # the eye's lid gap over its width in the photo


def _fixed(points: FloatArray) -> npt.NDArray[np.int32]:
    return np.round(points * _ONE).astype(np.int32)


def _opening(ring: FloatArray, shape: tuple[int, int], offset: FloatArray) -> Image:
    mask = np.zeros(shape, np.uint8)
    cv2.fillPoly(mask, [_fixed(ring - offset)], 255, cv2.LINE_AA, _SHIFT)
    return mask


def _white(texture: Image, opening: Image, disc: Image) -> npt.NDArray[np.float32] | None:
    """The eye white's colour: the palest, brightest pixels of the opening outside ``disc``."""
    around = (opening > 200) & (cv2.dilate(disc, np.ones((3, 3), np.uint8)) == 0)
    pixels = texture[..., :3][around].astype(np.float32)
    if len(pixels) < 6:
        return None
    luma = pixels @ np.array([0.114, 0.587, 0.299], np.float32)
    chroma = pixels.max(axis=1) - pixels.min(axis=1)  # skin and lids are coloured, the white is not
    score = luma - 2.0 * chroma
    best = pixels[score >= np.percentile(score, 100.0 * (1.0 - WHITE_SHARE))]
    out: npt.NDArray[np.float32] = np.median(best, axis=0).astype(np.float32)
    return out


def _cut_one(
    texture: Image, uv: FloatArray, eye: tuple[tuple[int, ...], int, int, tuple[int, ...]]
) -> IrisPatch | None:
    """One eye's iris patch; the texture's eye opening made bare in place (None: unusable)."""
    ring, outer, inner, iris = eye
    centre = uv[iris[0], :2].astype(np.float64)
    ring_radius = float(np.linalg.norm(uv[list(iris[1:]), :2] - centre, axis=1).mean())
    if ring_radius < MIN_RADIUS_PX:
        return None
    radius = ring_radius * IRIS_SCALE
    half = int(np.ceil(radius * _MARGIN)) + 2
    side = 2 * half + 1
    shift = np.array([[1.0, 0.0, half - centre[0]], [0.0, 1.0, half - centre[1]]])
    patch = np.asarray(
        cv2.warpAffine(texture, shift, (side, side), flags=cv2.INTER_LINEAR), np.uint8
    )
    yy, xx = np.mgrid[:side, :side].astype(np.float32) - half
    # the disc fades out at its edge past the ring: the iris's dark rim is kept, the
    # eye white caught around it blends into the painted one (no pale ring)
    disc = np.clip(
        (radius + 0.5 - np.hypot(xx, yy)) / (IRIS_FADE * (radius - ring_radius) + 1.0), 0.0, 1.0
    )
    corner = (centre - half).astype(np.float32)
    opening = cv2.erode(
        _opening(uv[list(ring), :2], (side, side), corner), np.ones((3, 3), np.uint8)
    )
    uncovered = patch[..., 3] > 127  # not hair or a hand in the photo
    seen = (disc > 0.5) & (opening > 127) & uncovered
    if seen.sum() < MIN_SEEN * (disc > 0.5).sum():
        return None
    colour = patch[..., :3].astype(np.float32)
    # what covers the iris in the photo is filled in from the disc's other half; the
    # lids are kept: drawn, the iris sits under the identity's own lid as in the photo
    # (heavy lids over the top of a round disc read as another, staring face)
    kept = uncovered[..., None]
    flipped, flipped_kept = colour[::-1], kept[::-1]
    fill = np.where(flipped_kept, flipped, colour[seen].mean(axis=0))
    colour = np.where(kept, colour, fill)
    image = np.dstack([colour, disc * 255.0]).round().clip(0, 255).astype(np.uint8)
    _bare(texture, uv[list(ring), :2], centre, ring_radius)
    axis = complex(*(uv[inner, :2] - uv[outer, :2]))
    return IrisPatch(np.ascontiguousarray(image), radius, axis, _openness(uv, eye))


def _bare(texture: Image, ring: FloatArray, centre: npt.NDArray[np.float64], radius: float) -> None:
    """In place: the iris under ``centre`` painted over with the eye white around it."""
    lo = np.floor(np.minimum(ring.min(axis=0), centre - radius) - 3).astype(int).clip(0)
    hi = np.ceil(np.maximum(ring.max(axis=0), centre + radius) + 4).astype(int)
    hi = np.minimum(hi, texture.shape[1::-1])
    box = texture[lo[1] : hi[1], lo[0] : hi[0]]
    shape = box.shape[:2]
    opening = _opening(ring, shape, lo.astype(np.float32))
    disc = _disc(shape, centre - lo, radius * BARE_RADIUS)
    white = _white(box, opening, _disc(shape, centre - lo, radius * WHITE_FROM))
    if white is None:
        return
    work = box[..., :3].copy()
    work[opening < 128] = white.round().astype(np.uint8)  # the lids do not bleed into the white
    hole = ((disc > 0) & (opening > 0)).astype(np.uint8) * 255
    filled = cv2.inpaint(work, hole, 3, cv2.INPAINT_TELEA).astype(np.float32)
    # the white darkens towards the lids (their shadow), as in a real eye
    inside = cv2.distanceTransform((opening > 127).astype(np.uint8), cv2.DIST_L2, 3)
    depth = max(1.0, float(inside.max()))
    shade = LID_SHADE + (1.0 - LID_SHADE) * np.clip(inside / depth, 0.0, 1.0)
    filled *= shade[..., None]
    soft = cv2.GaussianBlur(hole.astype(np.float32) / 255.0, (3, 3), 0)[..., None]
    mixed = filled * soft + box[..., :3].astype(np.float32) * (1.0 - soft)
    box[..., :3] = mixed.round().clip(0, 255).astype(np.uint8)


def _disc(shape: tuple[int, ...], centre: npt.NDArray[np.float64], radius: float) -> Image:
    disc = np.zeros(shape[:2], np.uint8)
    at = (round(float(centre[0]) * _ONE), round(float(centre[1]) * _ONE))
    cv2.circle(disc, at, round(radius * _ONE), 255, -1, cv2.LINE_8, _SHIFT)
    return disc


def cut_irises(texture: Image, uv: FloatArray) -> tuple[Image, tuple[IrisPatch | None, ...]]:
    """The texture (BGRA) with bare eyes, and each eye's iris patch (None: not cut).

    ``uv``: the mesh in ``texture``'s pixels (the photo, before any completion).
    """
    if len(uv) < 478:
        return texture, (None, None)
    out = texture.copy()
    cut = [_cut_one(out, uv, (tuple(ring), o, i, iris)) for ring, o, i, iris in EYES]
    right, left = cut
    if right is not None and left is not None:  # a turned photo: the better-seen eye for both
        if abs(right.axis) < FORESHORTENED * abs(left.axis):
            right = _mirrored(left)
        elif abs(left.axis) < FORESHORTENED * abs(right.axis):
            left = _mirrored(right)
    return out, (right, left)


def _mirrored(patch: IrisPatch) -> IrisPatch:
    """The other eye's iris: the patch flipped left to right, its eye axis with it."""
    image = np.ascontiguousarray(patch.image[:, ::-1])
    return IrisPatch(
        image, patch.radius, complex(-patch.axis.real, patch.axis.imag), patch.openness
    )


def _openness(points: FloatArray, eye: tuple[object, int, int, tuple[int, ...]]) -> float:
    """The eye's lid gap over its corner-to-corner width."""
    _, outer, inner, iris = eye
    upper, lower = LIDS[0] if iris[0] == EYES[0][3][0] else LIDS[1]
    width = float(np.linalg.norm(points[inner, :2] - points[outer, :2]))
    gap = float(np.linalg.norm(points[upper, :2] - points[lower, :2]))
    return gap / width if width > 1e-6 else 0.0


def draw_irises(warped: Image, local: FloatArray, patches: tuple[IrisPatch | None, ...]) -> None:
    """In place: each iris patch at ``local``'s iris centre, clipped to its eye opening."""
    if len(local) < 478:
        return
    h, w = warped.shape[:2]
    for eye, patch in zip(EYES, patches, strict=True):
        ring, outer, inner, iris = eye
        if patch is None:
            continue
        axis = complex(*(local[inner, :2] - local[outer, :2]))
        if abs(axis) < 1.0 or abs(patch.axis) < 1e-6:
            continue
        a = axis / patch.axis  # texture -> frame: scale and turn with the eye
        radius = patch.radius * abs(a)
        centre = local[iris[0], :2].astype(np.float64)
        reach = radius * _MARGIN + 2
        x0, y0 = (max(0, int(np.floor(v - reach))) for v in centre)
        x1, y1 = (
            min(w, int(np.ceil(centre[0] + reach)) + 1),
            min(h, int(np.ceil(centre[1] + reach)) + 1),
        )
        if x1 - x0 < 2 or y1 - y0 < 2 or radius < 0.7:
            continue
        # a closing eye squashes the iris across the eye (as the old mesh did):
        # a full disc peeking through a slit reads as an open eye
        squash = 1.0
        if patch.openness > 1e-6:
            squash = float(np.clip(_openness(local, eye) / patch.openness, SQUASH_MIN, 1.0))
        matrix = _frame_to_patch(patch, axis, squash, (x0 - centre[0], y0 - centre[1]))
        size = (x1 - x0, y1 - y0)
        drawn = np.asarray(
            cv2.warpAffine(
                patch.image, matrix, size, flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
            ),
            np.uint8,
        )
        corner = np.array((x0, y0), np.float32)
        opening = _opening(local[list(ring), :2], (size[1], size[0]), corner)
        alpha = (drawn[..., 3].astype(np.float32) * opening.astype(np.float32)) / (255.0 * 255.0)
        box = warped[y0:y1, x0:x1]
        mixed = drawn[..., :3] * alpha[..., None] + box * (1.0 - alpha[..., None])
        box[...] = mixed.round().clip(0, 255).astype(np.uint8)


def _frame_to_patch(
    patch: IrisPatch, axis: complex, squash: float, corner: tuple[float, float]
) -> npt.NDArray[np.float64]:
    """The 2x3 map from the frame box's pixels to the patch's: the eye's turn and scale,
    ``squash`` across the eye; ``corner``: the box's corner from the iris centre."""
    scale = abs(axis) / abs(patch.axis)
    turn_f, turn_t = np.angle(axis), np.angle(patch.axis)

    def rotation(angle: float) -> npt.NDArray[np.float64]:
        c, s = np.cos(angle), np.sin(angle)
        return np.array([[c, -s], [s, c]])

    linear = rotation(turn_t) @ np.diag([1.0 / scale, 1.0 / (scale * squash)]) @ rotation(-turn_f)
    half = (patch.image.shape[0] - 1) / 2.0
    offset = linear @ np.asarray(corner, np.float64) + half
    out: npt.NDArray[np.float64] = np.hstack([linear, offset[:, None]])
    return out


def _corner_map(src: FloatArray, dst: FloatArray) -> tuple[complex, complex]:
    """The 2-D similarity z -> a z + b taking the two points ``src`` onto ``dst``."""
    s0, s1 = complex(*src[0]), complex(*src[1])
    d0, d1 = complex(*dst[0]), complex(*dst[1])
    a = (d1 - d0) / (s1 - s0) if s1 != s0 else 1.0 + 0j
    return a, d0 - a * s0


def follow_gaze(target: FloatArray, visitor: FloatArray) -> FloatArray:
    """``target`` with its iris points where the visitor's sit in their eyes."""
    if len(target) < 478 or len(visitor) < 478:
        return target
    out = target.copy()
    for _, outer, inner, iris in EYES:
        a, b = _corner_map(visitor[[outer, inner], :2], target[[outer, inner], :2])
        index = list(iris)
        z = visitor[index, 0] + 1j * visitor[index, 1]
        moved = a * z + b
        out[index, 0] = moved.real
        out[index, 1] = moved.imag
    return out
