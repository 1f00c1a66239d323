"""Checking an uploaded photo by its content: size, type, pixel count, then decoding it.

Every way an upload can be unusable raises ``UploadError`` with a message a
member of staff can act on. The type is read from the bytes (Pillow), never
from the name; a name or declared type that says otherwise is refused. The
pixel count is checked from the header before anything is decoded, so a
decompression bomb never reaches memory.
"""

from __future__ import annotations

import io
import logging
from pathlib import PurePosixPath

import cv2
import numpy as np
import numpy.typing as npt
from PIL import Image, UnidentifiedImageError

from appliance.errors import UploadError
from appliance.vision.analyzer import decode_image
from appliance.vision.pixel_limit import MAX_PIXELS, bomb_message, too_many_pixels

logger = logging.getLogger(__name__)

MAX_UPLOAD_BYTES = 10 * 1024 * 1024
MAX_STORED_SIDE = 2048  # stored photos are scaled down to this (the swap uses at most 512)
STORED_JPEG_QUALITY = 95
SUPPORTED = "JPEG, PNG or WebP"

# Pillow format -> (file name suffixes, MIME types) that may declare it
FORMATS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "JPEG": ((".jpg", ".jpeg", ".jpe", ".jfif"), ("image/jpeg", "image/pjpeg")),
    "PNG": ((".png",), ("image/png",)),
    "WEBP": ((".webp",), ("image/webp",)),
}
_NEUTRAL_TYPES = ("", "application/octet-stream")

BGRImage = npt.NDArray[np.uint8]


def check_upload(data: bytes, filename: str = "", content_type: str = "") -> BGRImage:
    """The uploaded photo as a BGR image; ``UploadError`` with the reason otherwise."""
    if not data:
        raise UploadError("the file is empty: choose a photo to upload")
    if len(data) > MAX_UPLOAD_BYTES:
        raise UploadError(
            f"the photo is {len(data) / 1e6:.1f} MB: at most {MAX_UPLOAD_BYTES // 2**20} MB"
        )
    fmt, size = _sniff(data)
    _check_declared(fmt, filename, content_type)
    image = decode_image(data)
    if image is None:
        raise UploadError("the photo is damaged and cannot be read: export it again")
    if image.shape[1] * image.shape[0] > MAX_PIXELS:  # EXIF rotation does not change the count
        raise UploadError(too_many_pixels(size))
    return image


def stored_jpeg(image: BGRImage) -> tuple[BGRImage, bytes]:
    """``image`` scaled to at most ``MAX_STORED_SIDE`` and its JPEG (no metadata)."""
    height, width = image.shape[:2]
    scale = MAX_STORED_SIDE / max(height, width)
    if scale < 1.0:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        image = np.asarray(cv2.resize(image, size, interpolation=cv2.INTER_AREA), np.uint8)
    return image, encode_jpeg(image, STORED_JPEG_QUALITY)


def encode_jpeg(image: BGRImage, quality: int = 90) -> bytes:
    ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise UploadError(f"cannot encode an image of shape {image.shape} as JPEG")
    return bytes(buf.tobytes())


def _sniff(data: bytes) -> tuple[str, tuple[int, int]]:
    """The format and size from the header, then a structural check of the whole file."""
    try:
        with Image.open(io.BytesIO(data)) as img:  # reads the header only
            fmt, size = str(img.format), img.size
            if fmt not in FORMATS:
                raise UploadError(f"{fmt} images are not supported: upload a {SUPPORTED} photo")
            if size[0] * size[1] > MAX_PIXELS:
                raise UploadError(too_many_pixels(size))
            img.verify()
    except UploadError:
        raise
    except Image.DecompressionBombError as exc:  # Pillow's own guard, far above ours
        raise UploadError(bomb_message()) from exc
    except UnidentifiedImageError as exc:
        raise UploadError(f"this file is not an image: upload a {SUPPORTED} photo") from exc
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise UploadError("the photo is damaged and cannot be read: export it again") from exc
    return fmt, size


def _check_declared(fmt: str, filename: str, content_type: str) -> None:
    suffixes, types = FORMATS[fmt]
    suffix = PurePosixPath(filename.replace("\\", "/")).suffix.lower()
    if suffix and suffix not in suffixes:
        raise UploadError(
            f"the file is named {suffix} but is a {fmt} image: rename it to {suffixes[0]} "
            "or export it again"
        )
    declared = content_type.split(";", 1)[0].strip().lower()
    if declared not in _NEUTRAL_TYPES and declared not in types:
        raise UploadError(f"the file was sent as {declared} but is a {fmt} image")
