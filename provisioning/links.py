"""Symlinks provisioning makes: the unit's wants link (enabling it) and unit masks.

``systemctl enable`` only makes the ``WantedBy=`` link; making it here works the
same on a mounted image, where systemctl cannot run. A mask is a link to
``/dev/null``.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path, PurePosixPath

from appliance.errors import OutputError
from provisioning.actions import Action, Status
from provisioning.layout import UNIT, WANTS_LINK, Layout

logger = logging.getLogger(__name__)

DEV_NULL = PurePosixPath("/dev/null")
SYSTEM_UNITS = PurePosixPath("/etc/systemd/system")


def link_action(layout: Layout, target: PurePosixPath, points_to: PurePosixPath) -> Action:
    host = layout.host(target)
    status: Status = "create"
    if host.is_symlink():
        status = "unchanged" if os.readlink(host) == str(points_to) else "update"
    elif host.exists():
        status = "update"
    return Action("link", target, status, points_to=points_to)


def enable_unit(layout: Layout) -> Action:
    """``multi-user.target.wants/mirror.service -> /etc/systemd/system/mirror.service``."""
    return link_action(layout, WANTS_LINK, UNIT)


def mask(layout: Layout, unit: str) -> Action:
    return link_action(layout, SYSTEM_UNITS / unit, DEV_NULL)


def make_link(host: Path, points_to: PurePosixPath) -> None:
    """Point ``host`` at ``points_to`` atomically (a new link renamed over the old one)."""
    temp = host.with_name(f".{host.name}.new")
    try:
        host.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        os.symlink(str(points_to), temp)
        os.replace(temp, host)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise OutputError(f"cannot link {host} -> {points_to}: {exc.strerror or exc}") from exc
