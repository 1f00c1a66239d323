"""Colour matching and blending of a warped face into the frame."""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from appliance.vision.thumbnail import thumbnail

Image = npt.NDArray[np.uint8]
Mask = npt.NDArray[np.uint8]

# the photo's contrast (luma and chroma spread) is lowered to the visitor's, never
# raised: a pale, even photo given a tanned visitor's spread of chroma turned its eye
# make-up, lips and stray hair deep orange (Cr/Cb ratios of 1.8-3.0 on the shared
# portraits), and the open-mouthed man's soft photo given 1.3x its luma contrast
# read further from him (d_src 0.501 -> 0.493 on expressive_woman_long); the means
# still carry the skin tone and brightness
_STD_RATIO_RANGE = (0.5, 1.0)


# BGR -> YCrCb (full range, as OpenCV's COLOR_BGR2YCrCb): an affine map, so a
# per-channel gain and offset in YCrCb is one 3x4 matrix on BGR pixels.
_BGR2YCC = np.array(
    [[0.114, 0.587, 0.299], [-0.0813, -0.4187, 0.5], [0.5, -0.3313, -0.1687]], np.float64
)
_YCC2BGR = np.linalg.inv(_BGR2YCC)
_CHROMA_OFFSET = np.array([0.0, 128.0, 128.0])
_STATS_SIDE = 96  # colour statistics are taken on a thumbnail of this size


@dataclass
class FaceThumbs:
    """Thumbnails of one face (at most ``_STATS_SIDE`` across) shared by the colour match
    and the relight: made once per face instead of once per step (``face_thumbs``)."""

    warped: Image  # the identity's warped face; recoloured by ``match_colour``
    visitor: Image  # the frame under it
    core: Mask  # 1 inside the mask


def face_thumbs(warped: Image, visitor: Image, mask: Mask) -> FaceThumbs:
    h, w = mask.shape
    scale = min(1.0, _STATS_SIDE / max(h, w))
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    core = np.asarray(cv2.resize(mask, size, interpolation=cv2.INTER_NEAREST) > 127, np.uint8)
    return FaceThumbs(thumbnail(warped, size), thumbnail(visitor, size), core)


def _ycc_stats(small: Image, core: Mask) -> tuple[np.ndarray, np.ndarray] | None:
    if cv2.countNonZero(core) < 16:
        return None
    # OpenCV's YCrCb is _BGR2YCC plus _CHROMA_OFFSET (rounded to 8 bits)
    mean, std = cv2.meanStdDev(cv2.cvtColor(small, cv2.COLOR_BGR2YCrCb), mask=core)
    return mean.ravel() - _CHROMA_OFFSET, std.ravel() + 1e-3


class ColourMemory:
    """One face's colour transform, eased from frame to frame (no flicker).

    Each frame's transform moves the remembered one ``rate`` of the way.
    """

    def __init__(self, rate: float = 0.3) -> None:
        self.rate = rate
        self.matrix: npt.NDArray[np.float32] | None = None
        self.detail: float | None = None  # the face's sharpening gain (appliance.vision.detail)
        self.grain: float | None = None  # how much of the visitor's grain it takes
        self.shading: npt.NDArray[np.float32] | None = None  # its relight gain field

    def ease_detail(self, gain: float) -> float:
        """The sharpening gain, eased like the colour transform."""
        self.detail = (
            gain if self.detail is None else self.detail + self.rate * (gain - self.detail)
        )
        return self.detail

    def ease_shading(self, gain: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """The relight gain field (appliance.vision.relight), eased like the colour
        transform; a field of another size (the face grew) is resized first."""
        previous = self.shading
        if previous is not None and previous.shape != gain.shape:
            size = (gain.shape[1], gain.shape[0])
            previous = np.asarray(cv2.resize(previous, size, interpolation=cv2.INTER_LINEAR))
        if previous is None:
            self.shading = gain
        else:
            self.shading = (previous + self.rate * (gain - previous)).astype(np.float32)
        return self.shading

    def ease_grain(self, gain: float) -> float:
        """The grain gain, eased like the colour transform."""
        self.grain = gain if self.grain is None else self.grain + self.rate * (gain - self.grain)
        return self.grain

    def ease(self, matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        if self.matrix is None:
            self.matrix = matrix
        else:
            self.matrix = (self.matrix + self.rate * (matrix - self.matrix)).astype(np.float32)
        return self.matrix


def match_colour(
    warped: Image,
    target: Image,
    mask: Mask,
    memory: ColourMemory | None = None,
    thumbs: FaceThumbs | None = None,
) -> Image:
    """Reinhard-style transfer in YCrCb: the warped face takes the target's mean, and its
    contrast where the target's is lower.

    Done as one affine colour transform of the BGR pixels, with statistics from
    thumbnails (``thumbs``, made here when not given; its ``warped`` thumbnail
    is recoloured too). A grey (black-and-white) source takes the visitor's
    chroma, so it never shows a grey face on a coloured neck. With ``memory``
    the transform is eased across frames.
    """
    thumbs = thumbs or face_thumbs(warped, target, mask)
    src = _ycc_stats(thumbs.warped, thumbs.core)
    dst = _ycc_stats(thumbs.visitor, thumbs.core)
    if src is None or dst is None:
        return warped
    ratio = np.clip(dst[1] / src[1], *_STD_RATIO_RANGE)
    offset = dst[0] - src[0] * ratio
    # the chroma shift grows with the new luma (Y' / the visitor's mean): light's tint
    # is proportional to its brightness, so a dark moustache or brow is not tinted as
    # much as the skin (a flat shift turned them rust-orange); on average the same
    ycc = np.diag(ratio)
    tint = offset[1:] / max(float(dst[0][0]), 1.0)
    ycc[1:, 0] += tint * ratio[0]
    constant = offset.copy()
    constant[1:] = tint * offset[0]
    linear = _YCC2BGR @ ycc @ _BGR2YCC
    matrix = np.hstack([linear, (_YCC2BGR @ constant)[:, None]]).astype(np.float32)
    if memory is not None:
        matrix = memory.ease(matrix)
    thumbs.warped = np.asarray(cv2.transform(thumbs.warped, matrix), np.uint8)
    out: Image = np.asarray(cv2.transform(warped, matrix), np.uint8)
    return out


def feather(mask: Mask, width_px: int) -> Mask:
    """Erode by half the width, then blur: 255 inside, a soft edge, 0 outside the mask.

    Wide feathers are computed on a downscaled mask: the edge is smooth anyway.
    """
    width_px = max(1, width_px)
    factor = max(1, width_px // 6)
    h, w = mask.shape
    small = mask
    if factor > 1:
        small_size = (max(1, w // factor), max(1, h // factor))
        shrunk = thumbnail(mask, small_size)
        small = np.asarray(shrunk, np.uint8)
    width = max(1, round(width_px / factor))
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (width | 1, width | 1))
    inner = cv2.erode(small, kernel)
    # a blur that has fallen to about 1% where the erosion began, at the mask's edge
    # (OpenCV's own sigma for this kernel left 15-25% there: a visible step where the
    # face and the frame differ, a band where a dark forehead top met the visitor's)
    sigma = max(0.5, (width | 1) // 2 / 2.5)
    blur = 2 * math.ceil(3 * sigma) + 1
    soft = cv2.GaussianBlur(inner, (blur, blur), sigma)
    if factor > 1:
        soft = np.asarray(cv2.resize(soft, (w, h), interpolation=cv2.INTER_LINEAR), np.uint8)
    out: Mask = np.minimum(np.asarray(soft, np.uint8), mask)
    return out


def alpha_blend(dst: Image, src: Image, alpha: Mask) -> None:
    """In place: dst = src * a + dst * (1 - a)."""
    weight = alpha.astype(np.float32) * (1.0 / 255.0)
    mixed = cv2.blendLinear(src, dst, weight, 1.0 - weight)
    np.copyto(dst, mixed)


def poisson_blend(dst: Image, src: Image, mask: Mask) -> None:
    """In place: OpenCV seamlessClone (gradient-domain), the high-quality option."""
    binary = np.where(mask > 127, 255, 0).astype(np.uint8)
    binary[:1, :] = 0
    binary[-1:, :] = 0
    binary[:, :1] = 0
    binary[:, -1:] = 0
    ys, xs = np.nonzero(binary)
    if ys.size < 16:
        return
    x0, x1, y0, y1 = xs.min(), xs.max() + 1, ys.min(), ys.max() + 1
    centre = (int((x0 + x1) // 2), int((y0 + y1) // 2))
    cloned: Image = np.asarray(
        cv2.seamlessClone(src, dst, binary, centre, cv2.NORMAL_CLONE), np.uint8
    )
    # Keep the soft edge: cloned inside, feathered towards the original outside.
    alpha_blend(dst, cloned, mask)
