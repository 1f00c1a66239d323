"""Frame sizes given as text (``640x480``)."""

from __future__ import annotations

import re

from appliance.errors import ConfigError


def parse_size(text: str) -> tuple[int, int]:
    """(width, height) from ``WxH``; a clear ``ConfigError`` otherwise."""
    match = re.fullmatch(r"(\d{2,5})x(\d{2,5})", text.strip())
    if not match:
        raise ConfigError(f"size must look like 640x480, got {text!r}")
    return int(match.group(1)), int(match.group(2))
