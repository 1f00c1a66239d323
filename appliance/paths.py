"""Where the appliance keeps its data: model cache, config, identities."""

from __future__ import annotations

import os
from pathlib import Path

from appliance.resources import bundled_manifest

DATA_DIR_ENV = "MIRROR_DATA_DIR"
MANIFEST_ENV = "MIRROR_MODELS_MANIFEST"

REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """The data directory: ``$MIRROR_DATA_DIR`` or ``~/.local/share/face-mirror``."""
    configured = os.environ.get(DATA_DIR_ENV)
    if configured:
        return Path(configured).expanduser().resolve()
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "face-mirror"


def model_cache_dir(base: Path | None = None) -> Path:
    return (base or data_dir()) / "models"


def manifest_path() -> Path:
    """The model manifest: ``$MIRROR_MODELS_MANIFEST`` or the one shipped in the package."""
    configured = os.environ.get(MANIFEST_ENV)
    if configured:
        return Path(configured)
    return bundled_manifest()


def web_dir(base: Path | None = None) -> Path:
    """``<data dir>/web``: the admin account, the secret key, web.yaml, the control state."""
    return (base or data_dir()) / "web"
