"""One pixel limit for every decoded image, checked from the header before decoding.

The admin page's uploads, the CLI's inputs and the identity photos all go
through here, so the limit and the message are the same everywhere. Pillow
reads the size from the header without decoding (``Image.open(...).size``);
OpenCV would decode the whole image first, so a decompression bomb (a few kB
of PNG claiming billions of pixels) is refused before it reaches memory.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from appliance.errors import ImageTooLargeError, InputError

logger = logging.getLogger(__name__)

MAX_PIXELS = 25_000_000
READABLE = "PNG, JPEG, BMP, WebP, TIFF"


def too_many_pixels(size: tuple[int, int]) -> str:
    """The message for an image of ``size`` (width, height) over ``MAX_PIXELS``."""
    width, height = size
    return (
        f"the photo is {width}x{height} ({width * height / 1e6:.0f} megapixels): "
        f"at most {MAX_PIXELS // 1_000_000} megapixels"
    )


def bomb_message() -> str:
    """The message when Pillow itself refuses to open the image for its pixel count."""
    return (
        "the image claims far too many pixels (a decompression bomb?): "
        f"use a photo of at most {MAX_PIXELS // 1_000_000} megapixels"
    )


def check_size(size: tuple[int, int]) -> None:
    """Raise ``ImageTooLargeError`` when ``size`` (width, height) is over the limit."""
    if size[0] * size[1] > MAX_PIXELS:
        raise ImageTooLargeError(too_many_pixels(size))


def check_image_file(path: Path) -> None:
    """Refuse ``path`` from its header: too many pixels, or not an image Pillow knows.

    Raises ``ImageTooLargeError`` or ``InputError``, each message starting with the path.
    Nothing is decoded; only the header is read.
    """
    try:
        with Image.open(path) as image:  # reads the header only
            size = image.size
    except Image.DecompressionBombError as exc:  # Pillow's own guard, far above ours
        raise ImageTooLargeError(f"{path}: {bomb_message()}") from exc
    except UnidentifiedImageError as exc:
        raise InputError(f"{path}: not a readable image ({READABLE})") from exc
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise InputError(f"{path}: not a readable image ({READABLE}): {exc}") from exc
    try:
        check_size(size)
    except ImageTooLargeError as exc:
        raise ImageTooLargeError(f"{path}: {exc}") from None
