"""The package's own data files, found through :mod:`importlib.resources`.

Never through the source tree: an installed wheel has no ``models/`` or
``hardware_profiles/`` beside it, only the packages ``appliance.data.*``.
"""

from __future__ import annotations

import logging
from importlib.resources import files
from pathlib import Path

from appliance.errors import ConfigError

logger = logging.getLogger(__name__)

MODELS_PACKAGE = "appliance.data.models"
PROFILES_PACKAGE = "appliance.data.hardware_profiles"


def data_dir_of(package: str) -> Path:
    """The folder of a data package on disk (wheels and editable installs unpack to folders)."""
    try:
        folder = Path(str(files(package)))
    except ModuleNotFoundError as exc:
        raise ConfigError(f"the installed package has no {package}: reinstall face-mirror") from exc
    if not folder.is_dir():
        raise ConfigError(f"{package} is not a folder on disk ({folder}): reinstall face-mirror")
    return folder


def bundled_manifest() -> Path:
    return data_dir_of(MODELS_PACKAGE) / "manifest.yaml"


def bundled_profiles() -> Path:
    return data_dir_of(PROFILES_PACKAGE)
