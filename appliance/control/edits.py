"""Settings changes made on a page that may be out of date: what that page changed, merged.

Two staff can have the settings page open at once. Each page carries the
``version`` of the ``SettingsView`` it was made from; saving it applies only
the fields that page changed (against that view) over what is in force now,
so a save from an older page never undoes another one's change. A field both
changed, to different values, is a conflict and nothing is saved. The views
handed out lately are kept by version (``ViewHistory``); a page older than
those, from before a restart with other settings, cannot be compared.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from appliance.config import Settings, updated
from appliance.control.api import SettingsView
from appliance.control.live_apply import changed_keys, flatten
from appliance.errors import SettingsConflictError

logger = logging.getLogger(__name__)

HISTORY_SIZE = 64  # views kept: pages opened this long ago (in changes) still merge
IDENTITY_KEY = "active identity"
TOO_OLD = (
    "This page is older than the settings in force (changed since it was opened, or the "
    "mirror restarted since), so what it changed cannot be told apart: nothing was saved. "
    "The form now shows the settings in force: make your change again."
)
CONFLICT = (
    "Not saved: since you opened this page, someone changed the same settings. "
    "The form now shows the settings in force with your changes: check them and save again "
    "to keep yours."
)


class ViewHistory:
    """The views handed out lately, by version (the oldest dropped past ``size``)."""

    def __init__(self, size: int = HISTORY_SIZE) -> None:
        self._views: OrderedDict[str, SettingsView] = OrderedDict()
        self._size = size

    def remember(self, view: SettingsView) -> None:
        self._views[view.version] = view
        self._views.move_to_end(view.version)
        while len(self._views) > self._size:
            self._views.popitem(last=False)

    def find(self, version: str) -> SettingsView | None:
        return self._views.get(version)


@dataclass(frozen=True)
class Merged:
    """What to apply: the settings, and the identity and switch (None: leave as they are)."""

    settings: Settings
    identity: str | None
    swapping: bool | None


def merge(
    base: SettingsView | None,
    current: SettingsView,
    yours: Settings,
    identity: str | None,
    swapping: bool | None,
) -> Merged:
    """``yours`` (and the identity and switch) as the page sent them, made on ``base``:
    what the page changed, over ``current``. Raises ``SettingsConflictError``."""
    if base is None:
        raise SettingsConflictError(TOO_OLD)
    mine = changed_keys(base.settings, yours)
    theirs = set(changed_keys(base.settings, current.settings))
    was, now, new = (_flat(s) for s in (base.settings, current.settings, yours))
    clashes = [
        _clash(key, was[key], now[key], new[key])
        for key in mine
        if key in theirs and now[key] != new[key]
    ]
    if identity == base.identity:
        identity = None  # the page left it as it was
    if identity is not None and current.identity not in (base.identity, identity):
        clashes.append(_clash(IDENTITY_KEY, base.identity, current.identity, identity))
    if swapping == base.swapping:
        swapping = None
    if clashes:
        raise SettingsConflictError(CONFLICT, tuple(clashes))
    settings = updated(current.settings, _nested({key: new[key] for key in mine}))
    return Merged(settings, identity, swapping)


def _flat(settings: Settings) -> dict[str, Any]:
    return flatten(settings.model_dump(mode="json"))


def _clash(key: str, was: Any, now: Any, yours: Any) -> str:
    return f"{key}: {was!r} when you opened the page, {now!r} now, yours {yours!r}"


def _nested(flat: dict[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key, value in flat.items():
        *parents, last = key.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return tree
