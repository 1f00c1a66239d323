"""Frame sizes given as text (``640x480``)."""

from __future__ import annotations

import re

from appliance.errors import ConfigError
from appliance.vision.pixel_limit import MAX_PIXELS


def parse_size(text: str) -> tuple[int, int]:
    """(width, height) from ``WxH``; a clear ``ConfigError`` otherwise."""
    match = re.fullmatch(r"(\d{2,5})x(\d{2,5})", text.strip())
    if not match:
        raise ConfigError(f"size must look like 640x480, got {text!r}")
    width, height = int(match.group(1)), int(match.group(2))
    if width * height > MAX_PIXELS:
        raise ConfigError(
            f"size {width}x{height} is too large: at most {MAX_PIXELS // 1_000_000} megapixels"
        )
    return width, height
