"""Load and validate the hardware profiles from ``hardware_profiles/*.yaml``.

Any broken file stops the load with one line naming the file, the key and
the value: a mis-typed profile must never be skipped and replaced silently by
a slower one.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from appliance.device.profile import HardwareProfile
from appliance.errors import ConfigError
from appliance.resources import bundled_profiles

logger = logging.getLogger(__name__)

PROFILES_ENV = "MIRROR_HARDWARE_PROFILES"


def profiles_dir() -> Path:
    """``$MIRROR_HARDWARE_PROFILES`` or the profiles shipped in the package."""
    configured = os.environ.get(PROFILES_ENV)
    if configured:
        return Path(configured).expanduser()
    return bundled_profiles()


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _describe(exc: ValidationError, path: Path) -> str:
    parts = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"{key}={err.get('input')!r}: {_one_line(err['msg'])}")
    return f"invalid hardware profile {path}: " + "; ".join(parts)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """``expected ',' or ']' at line 3, column 1`` rather than YAML's multi-line report."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return _one_line(exc)


def _read_mapping(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"cannot read hardware profile {path}: {_yaml_problem(exc)}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read hardware profile {path}: {_one_line(exc)}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"hardware profile {path} must be a mapping, not {type(data).__name__}")
    return data


def load_profile(path: Path) -> HardwareProfile:
    """One profile; its ``name`` must equal the file name stem."""
    data = _read_mapping(path)
    try:
        profile = HardwareProfile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path)) from exc
    if profile.name != path.stem:
        raise ConfigError(
            f"invalid hardware profile {path}: name={profile.name!r}: "
            f"must equal the file name {path.stem!r}"
        )
    return profile


def load_profiles(directory: Path | None = None) -> dict[str, HardwareProfile]:
    """Every ``*.yaml`` profile in ``directory``, by name; at least one must be a fallback."""
    directory = directory or profiles_dir()
    paths = sorted(directory.glob("*.yaml"))
    if not paths:
        raise ConfigError(f"no hardware profiles (*.yaml) in {directory}")
    profiles = {path.stem: load_profile(path) for path in paths}
    if not any(p.fallback for p in profiles.values()):
        raise ConfigError(f"no fallback profile (fallback: true) in {directory}")
    logger.debug("loaded %d hardware profiles from %s", len(profiles), directory)
    return profiles
