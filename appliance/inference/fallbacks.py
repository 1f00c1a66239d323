"""The record of every backend fallback: warned once, kept for `mirror doctor` and the admin page.

A backend that was asked for and not used (TensorRT absent, Edge TPU unplugged,
a provider silently dropped by onnxruntime) is a ``Fallback``: what was asked,
what is used instead, and why. ``record_fallback`` warns (``BackendFallbackWarning``
and the log) the first time a given fallback happens and keeps it; ``fallbacks()``
lists them for reports.
"""

from __future__ import annotations

import logging
import threading
import warnings
from dataclasses import dataclass

from appliance.errors import BackendFallbackWarning

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Fallback:
    """``wanted`` was asked for ``subject`` (a model or role); ``used`` runs it; ``reason``."""

    subject: str
    wanted: str
    used: str
    reason: str

    def describe(self) -> str:
        return f"{self.subject}: {self.wanted} -> {self.used} ({self.reason})"


_lock = threading.Lock()
_seen: dict[tuple[str, str, str], Fallback] = {}


def record_fallback(subject: str, wanted: str, used: str, reason: str) -> Fallback:
    """Keep the fallback; warn and log it the first time it happens."""
    fallback = Fallback(subject, wanted, used, reason)
    key = (subject, wanted, used)
    with _lock:
        first = key not in _seen
        _seen[key] = fallback
    if first:
        logger.warning("backend fallback: %s", fallback.describe())
        warnings.warn(fallback.describe(), BackendFallbackWarning, stacklevel=2)
    return fallback


def fallbacks() -> list[Fallback]:
    """Every fallback recorded in this process, oldest first."""
    with _lock:
        return list(_seen.values())


def clear_fallbacks() -> None:
    """Forget them (tests; a fresh probe)."""
    with _lock:
        _seen.clear()
