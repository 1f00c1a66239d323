"""Addresses that logged in here: remembered for ``trust_s``, across restarts when given a file.

A trusted address is not held back by the slow-down shared by new addresses
nor by its IPv6 /64's lock-out: only its own lock-out applies to it. The
file (``<data dir>/web/trusted_clients.json``, 0600) is written atomically at
each login; at most ``max_clients`` addresses are kept, the least recent
forgotten first. Expiry is wall-clock time, so it holds across reboots. A
missing or unreadable file starts an empty list (an unreadable one is
logged), and a failed write keeps the list in memory only (logged).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from appliance.errors import OutputError
from appliance.fileio import atomic_write_text

logger = logging.getLogger(__name__)

TRUST_S = 30 * 86400.0
MAX_CLIENTS = 64
MAX_ADDRESS_CHARS = 64
FORMAT_VERSION = 1


class TrustedClients:
    """The addresses that logged in within ``trust_s`` (wall-clock seconds)."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        trust_s: float = TRUST_S,
        max_clients: int = MAX_CLIENTS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self.trust_s = trust_s
        self.max_clients = max_clients
        self._clock = clock
        self._lock = threading.Lock()
        self._until: OrderedDict[str, float] = OrderedDict()
        if path is not None:
            self._load(path)

    def __contains__(self, address: object) -> bool:
        with self._lock:
            until = self._until.get(str(address))
            if until is None:
                return False
            if until <= self._clock():
                del self._until[str(address)]
                return False
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._until)

    def trust(self, address: str) -> None:
        """``address`` logged in: trust it for ``trust_s`` from now (and save the list)."""
        with self._lock:
            self._until.pop(address, None)
            self._until[address] = self._clock() + self.trust_s
            while len(self._until) > self.max_clients:
                self._until.popitem(last=False)
            text = json.dumps({"version": FORMAT_VERSION, "until_unix": dict(self._until)})
        if self.path is not None:
            try:
                atomic_write_text(self.path, text + "\n", mode=0o600)
            except OutputError as exc:
                logger.warning("trusted addresses kept until restart only: %s", exc)

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            logger.warning("ignoring the trusted addresses in %s: %s", path, exc)
            return
        saved = data.get("until_unix") if isinstance(data, dict) else None
        if not isinstance(saved, dict):
            logger.warning("ignoring the trusted addresses in %s: not a list of them", path)
            return
        now = self._clock()
        for address, until in saved.items():
            valid = isinstance(until, (int, float)) and len(address) <= MAX_ADDRESS_CHARS
            if valid and now < until <= now + self.trust_s:
                self._until[address] = float(until)
        while len(self._until) > self.max_clients:
            self._until.popitem(last=False)
