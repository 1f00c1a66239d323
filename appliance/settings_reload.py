"""Reloading the settings file into a running mirror (SIGHUP, systemd's ``ExecReload``).

The file is read and validated first: a bad file changes nothing (the last
good settings stay in force) and is reported. Otherwise the keys that apply
live (the admin page's rules, ``appliance.control.live_apply``) are applied between
frames and the others are reported as applying at the next start. The file
is not written. The profile's target rate stays in force unless the file
sets ``pipeline.target_fps``, as at start. A good file reloaded ends safe mode
(``cli.safe_mode``); with no file there is nothing to leave it for.
"""

from __future__ import annotations

import logging
from pathlib import Path

from appliance.config import load_settings
from appliance.errors import ConfigError
from appliance.inference.runtime import with_target_fps
from appliance.session import MirrorSession

logger = logging.getLogger(__name__)


def reload_settings(session: MirrorSession, path: Path) -> str:
    """Apply the settings in ``path`` to ``session``; a one-line account of what happened."""
    try:
        new = with_target_fps(load_settings(path), session.choice)
    except ConfigError as exc:
        logger.warning("settings not reloaded: %s", exc)
        return f"settings not reloaded, the last good ones stay in force: {exc}"
    result = session.control.apply_settings(new, save=False)
    if path.exists():
        session.control.set_safe_mode("")
    changed, later = list(result.changed), list(result.at_next_start)
    session.settings = new
    if not changed:
        text = f"settings reloaded from {path}: nothing changed"
    else:
        text = f"settings reloaded from {path}: {', '.join(changed)}"
        if later:
            text += f" ({', '.join(later)} at the next start)"
    logger.info("%s", text)
    return text
