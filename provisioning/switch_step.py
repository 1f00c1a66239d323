"""The last step of an install that made a new venv: point ``/opt/mirror/venv`` at it, and
on a running system prove it, or go back.

On the live system with systemd running (``/run/systemd/system``) and a venv that
ran before, the service is restarted on the new venv and must become healthy
within a limit (:mod:`provisioning.health`); if it does not, the links are put
back as they were, the service is restarted on the previous venv, and the
install fails with one line that says so. On a mounted image (``--root``), or a
first install, only the link is made: systemd starts the service at boot. Only
the active and the previous venv are kept (:func:`provisioning.venvs.prune`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import PurePosixPath

from provisioning import venvs
from provisioning.actions import Action
from provisioning.errors import ProvisionError
from provisioning.health import Health, ask_healthz, wait_healthy
from provisioning.layout import Layout
from provisioning.service import UNIT_NAME, ServiceControl

logger = logging.getLogger(__name__)

SYSTEMD_RUN = PurePosixPath("/run/systemd/system")  # what sd_booted() looks for
HEALTH_TIMEOUT_S = 120.0

Say = Callable[[str], None]


def systemd_running(layout: Layout) -> bool:
    return layout.is_live() and layout.host(SYSTEMD_RUN).is_dir()


def switch_action(layout: Layout, venv: Action) -> Action | None:
    """The link's switch after the venv step that made ``venv`` (none when it is unchanged)."""
    if not venv.changes:
        return None
    vid = venv.target.name
    before = venvs.read_links(layout).active is not None or venvs.has_plain_venv(layout)
    if systemd_running(layout) and before:
        note = f"then {UNIT_NAME} restarted and checked; back to the previous venv if unhealthy"
    elif layout.is_live():
        note = f"{UNIT_NAME} runs it from its next start"
    else:
        note = "the device runs it from its next boot"
    return Action(
        "switch",
        layout.venv,
        venv.status,
        names=(vid,),
        note=note,
        points_to=PurePosixPath(layout.venvs_dir.name) / vid,
    )


def switch(
    layout: Layout,
    action: Action,
    service: ServiceControl | None,
    timeout_s: float,
    say: Say,
) -> None:
    """Point the link at the action's venv; on a running systemd, restart and check it."""
    vid = action.names[0]
    venvs.adopt_plain(layout)  # an older install's folder becomes the previous venv
    before = venvs.read_links(layout)
    old = before.active if before.active != vid else before.previous
    venvs.point(layout, vid, old)
    if service is None or old is None or not systemd_running(layout):
        venvs.prune(layout)
        return
    say(f"restarting {UNIT_NAME} on {vid}")
    health = _restart(layout, service, timeout_s, say)
    if health.ok:
        say(f"{UNIT_NAME} is healthy on {vid}")
        venvs.prune(layout)
        return
    logger.warning("%s failed its health check: %s; back to %s", vid, health.said, old)
    say(f"{vid} failed its health check ({health.said}): back to {old}")
    venvs.point(layout, old, before.previous if before.active != vid else None)
    back = _restart(layout, service, timeout_s, say)
    venvs.prune(layout)  # the failed venv goes (a later install makes it again)
    failed = f"the new version {vid} failed its health check within {timeout_s:g} s ({health.said})"
    if back.ok:
        raise ProvisionError(f"{failed}; the previous one ({old}) runs again")
    raise ProvisionError(
        f"{failed}; switched back to the previous one ({old}), which is not healthy "
        f"either ({back.said})"
    )


def _restart(layout: Layout, service: ServiceControl, timeout_s: float, say: Say) -> Health:
    try:
        service.restart()
    except ProvisionError as exc:
        return Health(False, str(exc))
    return wait_healthy(service, lambda: ask_healthz(layout), timeout_s, say)
