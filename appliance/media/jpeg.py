"""Decoding an MJPG camera's frames: libjpeg-turbo through ``simplejpeg``.

An MJPG camera's every frame is a JPEG to decode on the capture thread, and
that decode is part of each frame's latency. ``cv2.imdecode`` (also what
OpenCV's V4L2 backend calls when it converts frames itself) took 5.6-7.1 ms
for a 1280x720 frame on the 2-core x86 development machine; ``simplejpeg``,
on the same libjpeg-turbo, 2.1-3.2 ms in the same runs (both BGR out). So the
camera source asks the driver for the raw JPEG bytes and decodes them here.

The chroma is upsampled by repeating it (libjpeg-turbo's ``fastupsample``),
not interpolated: a 4:2:0 camera frame's colour is half-resolution either
way. It cut a 1280x720 decode by 0.4-0.6 ms (2.2 -> 1.6 ms back to back),
and the picture is within 44-54 dB (PSNR) of the interpolating decode's.
libjpeg-turbo's fast DCT would save 0.2 ms more, at 3-8 dB more loss; it
is not used.

A large frame whose JPEG carries restart markers is decoded in two halves at
once instead (``media.jpeg_halves``), to the same pixels.

Cameras now and then deliver a damaged frame (a USB hiccup truncates it):
like OpenCV, the decode is lenient and returns what libjpeg could recover; a
frame it cannot decode at all is None, for the caller to skip.
"""

from __future__ import annotations

import logging

import numpy as np
import numpy.typing as npt
import simplejpeg

from appliance.media.frames import Image

logger = logging.getLogger(__name__)

Encoded = bytes | npt.NDArray[np.uint8]


def decode_jpeg(data: Encoded, into: Image | None = None) -> Image | None:
    """``data`` (a JPEG's bytes, or a capture's row of them) as a writable HxWx3 BGR
    image (written into ``into``, rows of the image's size, when given), or None when
    it is no JPEG libjpeg can read."""
    flat = np.ascontiguousarray(data).reshape(-1) if isinstance(data, np.ndarray) else data
    try:
        image = simplejpeg.decode_jpeg(
            flat, colorspace="BGR", strict=False, fastupsample=True, buffer=into
        )
    except ValueError as exc:  # not a JPEG, or damaged past recovery
        logger.debug("a JPEG frame did not decode: %s", exc)
        return None
    out: Image = np.asarray(image, np.uint8) if into is None else into
    return out


def is_jpeg(data: npt.NDArray[np.generic]) -> bool:
    """Whether a capture's frame is still a JPEG's bytes (one row of uint8 starting with
    the JPEG start-of-image marker) rather than decoded pixels."""
    return (
        data.dtype == np.uint8
        and data.ndim in (1, 2)
        and (data.ndim == 1 or data.shape[0] == 1)
        and data.size >= 4
        and int(data.flat[0]) == 0xFF
        and int(data.flat[1]) == 0xD8
    )
