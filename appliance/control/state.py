"""What staff chose that is not in the settings file: the active identity, swapping on/off.

Kept in ``<data dir>/web/state.json`` (atomic, 0600) so it survives a restart;
a missing or unreadable file gives the defaults (the identity ``mirror run``
was started with, swapping on).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from appliance.fileio import atomic_write_text

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MirrorState:
    """``active``: a library identity's name, or None for the start-up identity."""

    active: str | None = None
    swapping: bool = True


def load_state(path: Path) -> MirrorState:
    if not path.exists():
        return MirrorState()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        active = data.get("active")
        swapping = data.get("swapping", True)
        if not (active is None or isinstance(active, str)) or not isinstance(swapping, bool):
            raise ValueError("unexpected types")
    except (OSError, ValueError, AttributeError) as exc:
        logger.warning("ignoring unreadable UI state %s: %s", path, exc)
        return MirrorState()
    return MirrorState(active, swapping)


def save_state(path: Path, state: MirrorState) -> None:
    text = json.dumps({"active": state.active, "swapping": state.swapping}, indent=2)
    atomic_write_text(path, text + "\n", mode=0o600)
