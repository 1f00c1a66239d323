"""Colour matching and blending of a warped face into the frame."""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

Image = npt.NDArray[np.uint8]
Mask = npt.NDArray[np.uint8]

_STD_RATIO_RANGE = (0.5, 2.0)
_SAMPLE_STEP = 2


def match_colour(warped: Image, target: Image, mask: Mask) -> Image:
    """Reinhard transfer in Lab: the warped face takes the target's skin mean and contrast.

    A grey (black-and-white) source takes the visitor's chroma, so it never
    shows a grey face on a coloured neck.
    """
    core = mask[::_SAMPLE_STEP, ::_SAMPLE_STEP] > 127
    if int(core.sum()) < 16:
        return warped
    src_lab = cv2.cvtColor(warped, cv2.COLOR_BGR2LAB)
    dst_lab = cv2.cvtColor(target, cv2.COLOR_BGR2LAB)
    src_px = src_lab[::_SAMPLE_STEP, ::_SAMPLE_STEP][core].astype(np.float32)
    dst_px = dst_lab[::_SAMPLE_STEP, ::_SAMPLE_STEP][core].astype(np.float32)
    src_mean, src_std = src_px.mean(axis=0), src_px.std(axis=0) + 1e-3
    dst_mean, dst_std = dst_px.mean(axis=0), dst_px.std(axis=0) + 1e-3
    ratio = np.clip(dst_std / src_std, *_STD_RATIO_RANGE)
    gain = ratio.astype(np.float32)
    offset = (dst_mean - src_mean * ratio).astype(np.float32)
    lab = src_lab.astype(np.float32) * gain + offset
    out: Image = cv2.cvtColor(np.clip(lab, 0, 255).astype(np.uint8), cv2.COLOR_LAB2BGR)
    return out


def feather(mask: Mask, width_px: int) -> Mask:
    """Erode by half the width, then blur: 255 inside, a soft edge, 0 outside the mask."""
    width_px = max(1, width_px)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (width_px | 1, width_px | 1))
    inner = cv2.erode(mask, kernel)
    blur = (width_px * 2) | 1
    soft: Mask = np.minimum(cv2.GaussianBlur(inner, (blur, blur), 0), mask)
    return soft


def alpha_blend(dst: Image, src: Image, alpha: Mask) -> None:
    """In place: dst = src * a + dst * (1 - a), only where a > 0."""
    ys, xs = np.nonzero(alpha)
    if ys.size == 0:
        return
    a = alpha[ys, xs].astype(np.float32)[:, None] * (1.0 / 255.0)
    mixed = src[ys, xs].astype(np.float32) * a + dst[ys, xs].astype(np.float32) * (1.0 - a)
    dst[ys, xs] = (mixed + 0.5).astype(np.uint8)


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
