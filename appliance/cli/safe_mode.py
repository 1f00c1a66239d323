"""``mirror run``'s settings: the settings file, or safe mode when it cannot be used.

Under systemd, exiting on a settings file that does not read (a manual edit, a
corrupted card) is a restart loop with no admin page to fix it. ``mirror run``
starts in safe mode instead: the default settings, the bad file moved aside as
``config.yaml.bad-<UTC time>`` (never deleted, never overwritten), and the
problem on the dashboard, ``/healthz`` and the HDMI screen until staff save
the settings page or a good file is reloaded (SIGHUP). Safe mode holds across
restarts while there is no settings file but a kept bad one. A ``--config``
file that does not exist (and was never moved aside) is still an error: that
is a typo in the command, not a broken card. The other commands (``swap-image``,
``identity``, ``bench``, ...) still stop on a bad file with one error line.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from appliance.config import Settings, load_settings
from appliance.errors import ConfigError

logger = logging.getLogger(__name__)

BAD_INFIX = ".bad-"
MAX_TRIES = 100  # kept names tried within one second


@dataclass(frozen=True)
class RunSettings:
    """The settings to run with; ``safe_mode``: why they are the defaults ("": they are
    not); ``save_to``: where the admin page saves (None: nowhere, the bad file stayed)."""

    settings: Settings
    safe_mode: str
    save_to: Path | None


def load_run_settings(path: Path, *, required: bool) -> RunSettings:
    """The settings in ``path``, or safe mode (``required``: a missing file is an error)."""
    if not path.exists():
        kept = newest_kept(path)
        if kept is None:
            return RunSettings(load_settings(path, required=required), "", path)
        return RunSettings(Settings(), _still_safe(path, kept), path)
    try:
        return RunSettings(load_settings(path), "", path)
    except ConfigError as exc:
        return _enter(path, exc)


def kept_files(path: Path) -> list[Path]:
    """The bad settings files moved aside from ``path``, oldest first."""
    return sorted(path.parent.glob(f"{path.name}{BAD_INFIX}*"))


def newest_kept(path: Path) -> Path | None:
    kept = kept_files(path)
    return kept[-1] if kept else None


def _enter(path: Path, exc: ConfigError) -> RunSettings:
    why = _short(exc, path)
    try:
        kept = _move_aside(path)
    except OSError as err:
        problem = (
            f"{path.name} could not be used ({why}) nor moved aside ({err.strerror or err}): "
            "the mirror runs on the defaults and the settings page cannot save until the "
            "file is fixed or removed"
        )
        return RunSettings(Settings(), problem, None)
    problem = (
        f"{path.name} could not be used ({why}); it is kept as {kept.name} and the mirror "
        "runs on the defaults until the settings are saved on the admin page"
    )
    return RunSettings(Settings(), problem, path)


def _still_safe(path: Path, kept: Path) -> str:
    """Safe mode again after a restart: no settings file yet, the bad one still kept."""
    try:
        load_settings(kept)
        why = "it reads now: rename it back to use it"
    except ConfigError as exc:
        why = _short(exc, kept)
    return (
        f"{path.name} could not be used and is kept as {kept.name} ({why}); the mirror "
        "runs on the defaults until the settings are saved on the admin page"
    )


def _move_aside(path: Path) -> Path:
    """Rename ``path`` to a kept name no other file has (never replacing one)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for attempt in range(MAX_TRIES):
        suffix = "" if attempt == 0 else f"-{attempt + 1}"
        kept = path.with_name(f"{path.name}{BAD_INFIX}{stamp}{suffix}")
        try:
            os.link(path, kept)  # fails when the name is taken: nothing is overwritten
        except FileExistsError:
            continue
        except OSError:  # a file system without hard links (vfat): rename to the free name
            if kept.exists():
                continue
            os.rename(path, kept)
            return kept
        os.unlink(path)
        return kept
    raise FileExistsError(f"no free name for {path.name}{BAD_INFIX}{stamp}")


def _short(exc: ConfigError, path: Path) -> str:
    """The error without the data folder's path (``/healthz`` shows it without a login)."""
    return str(exc).replace(str(path), path.name)
