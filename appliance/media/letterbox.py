"""Fit an image into a size without distorting it (black bars)."""

from __future__ import annotations

import cv2
import numpy as np

from appliance.media.frames import Image


def letterbox(image: Image, size: tuple[int, int]) -> Image:
    """``image`` scaled to fit (w, h) and centred on black."""
    w, h = size
    ih, iw = image.shape[:2]
    scale = min(w / iw, h / ih)
    nw, nh = max(1, round(iw * scale)), max(1, round(ih * scale))
    resized = cv2.resize(
        image, (nw, nh), interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    )
    out = np.zeros((h, w, 3), np.uint8)
    x0, y0 = (w - nw) // 2, (h - nh) // 2
    out[y0 : y0 + nh, x0 : x0 + nw] = resized
    return out
