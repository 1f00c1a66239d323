"""The per-device secret key that signs session cookies: created once, kept 0600."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path

from appliance.fileio import atomic_write_bytes, keep_private

logger = logging.getLogger(__name__)

KEY_BYTES = 32
MODE = 0o600


def load_or_create_secret(path: Path) -> bytes:
    """The key in ``path``; a new random one when the file is missing or too short."""
    path = Path(path)
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        key = b""
    if len(key) >= KEY_BYTES:
        keep_private(path, "secret key")
        return key
    if key:
        logger.warning("secret key %s is too short; replacing it (everyone logs in again)", path)
    key = secrets.token_bytes(KEY_BYTES)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write_bytes(path, key, MODE)
    logger.info("created the web UI secret key %s", path)
    return key
