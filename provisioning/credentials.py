"""The per-device secrets: the admin password and the session secret key, both 0600.

The password is generated here, hashed into ``web/auth.json`` by the web UI's
own :class:`web_ui.auth_store.AuthStore` (so the runtime accepts it) and
marked to be changed at the first login. It is returned to be printed once,
and written to ``web/first-boot.txt`` (0600) for the runtime to show on the
display until the first login; the runtime deletes that file then. Neither
secret is ever regenerated when present.
"""

from __future__ import annotations

import logging
from pathlib import Path

from appliance.fileio import atomic_write_text
from web_ui.auth_store import AuthStore, first_boot_notice
from web_ui.secret_key import load_or_create_secret

logger = logging.getLogger(__name__)

SECRET_MODE = 0o600


def create_secret_key(path: Path) -> None:
    load_or_create_secret(path)


def create_admin(auth_path: Path, first_boot_path: Path) -> str:
    """A new admin account; returns the password (shown once)."""
    password = AuthStore(auth_path).provision(must_change=True)
    atomic_write_text(first_boot_path, first_boot_notice(password), mode=SECRET_MODE)
    logger.info("admin account created; first-boot notice %s", first_boot_path)
    return password
