"""Restarting the mirror's service and asking whether it runs: a small protocol, systemctl
by default, so tests can plug in a service that really starts the venv's program.

``restart`` does not wait for the start (``--no-block``): the unit is ``Type=notify``
with a long start timeout (TensorRT engines), and the caller waits with its own
limit (:mod:`provisioning.health`). ``is_active`` is true once the unit is
``active`` (after ``READY=1``) in a start after the restart: its ``InvocationID``
differs from the one before, so the old process, still answering until systemd
gets to the queued restart, never passes for the new version.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

from provisioning.errors import ProvisionError
from provisioning.layout import UNIT
from provisioning.runner import Runner

logger = logging.getLogger(__name__)

UNIT_NAME = UNIT.name


class ServiceControl(Protocol):
    """The mirror's service on the live system."""

    def restart(self) -> None:
        """Stop it if it runs and start it again; raises ProvisionError when it cannot."""

    def is_active(self) -> bool:
        """It is up (started and ready)."""


class Systemctl:
    """``systemctl restart --no-block mirror.service`` and ``systemctl is-active``."""

    def __init__(self, runner: Runner, env: Mapping[str, str], unit: str = UNIT_NAME) -> None:
        self.runner = runner
        self.env = env
        self.unit = unit
        self._before = ""  # the InvocationID of the run the last restart replaces

    def restart(self) -> None:
        self._before = self._invocation()
        result = self.runner(("systemctl", "restart", "--no-block", self.unit), self.env)
        if result.returncode != 0:
            raise ProvisionError(f"systemctl restart {self.unit} failed: {result.last_line()}")

    def is_active(self) -> bool:
        result = self.runner(("systemctl", "is-active", "--quiet", self.unit), self.env)
        if result.returncode != 0:
            return False
        invocation = self._invocation()
        return bool(invocation) and invocation != self._before

    def _invocation(self) -> str:
        argv = ("systemctl", "show", "--property=InvocationID", "--value", self.unit)
        result = self.runner(argv, self.env)
        return result.output.strip() if result.returncode == 0 else ""
