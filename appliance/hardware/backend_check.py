"""Backends for ``mirror doctor``: try the profile's order, report every attempt.

The choice itself is ``appliance.inference.select.choose_backend(order)``,
imported when the doctor runs (a vendor SDK that fails to import disables
only its backend). The chooser is injectable for tests.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from appliance.errors import BackendError, MirrorError
from appliance.hardware.report import AttemptReport, BackendsReport
from appliance.inference.fallbacks import fallbacks

logger = logging.getLogger(__name__)


class AttemptLike(Protocol):
    """``appliance.inference.select.Attempt``: one backend tried, and how it went."""

    @property
    def name(self) -> str: ...

    @property
    def ok(self) -> bool: ...

    @property
    def reason(self) -> str: ...


Chooser = Callable[[Sequence[str]], tuple[Any, Sequence[AttemptLike]]]


def _litert_only(order: Sequence[str]) -> tuple[Any, Sequence[AttemptLike]]:
    """Stand-in while ``appliance.inference.select`` is absent: LiteRT CPU alone."""
    missing = "appliance.inference.select is not installed, so only litert-cpu was tried"
    if "litert-cpu" not in order:
        raise BackendError(f"{missing} and the profile does not list it")
    try:
        importlib.import_module("ai_edge_litert.interpreter")
    except ImportError as exc:
        raise BackendError(f"{missing}, and LiteRT cannot be imported: {exc}") from exc
    from appliance.inference.litert import LiteRTBackend

    attempt = AttemptReport(name="litert-cpu", ok=True, reason=f"LiteRT imports ({missing})")
    return LiteRTBackend(), [attempt]


def default_chooser() -> Chooser:
    """``choose_backend`` from ``appliance.inference.select``, or the LiteRT stand-in."""
    try:
        module = importlib.import_module("appliance.inference.select")
    except ImportError:
        logger.warning("appliance.inference.select is missing: checking litert-cpu only")
        return _litert_only
    chooser: Chooser = module.choose_backend
    return chooser


def check_backends(order: Sequence[str], chooser: Chooser | None = None) -> BackendsReport:
    """Choose a backend in ``order``; ``chosen`` is None when none works."""
    choose = chooser or default_chooser()
    chosen: str | None = None
    attempts: list[AttemptReport] = []
    try:
        backend, tried = choose(order)
        chosen = str(getattr(backend, "name", backend))
        attempts = [AttemptReport(name=a.name, ok=bool(a.ok), reason=a.reason) for a in tried]
    except MirrorError as exc:
        logger.info("no backend works: %s", exc)
        attempts = [AttemptReport(name="(all)", ok=False, reason=" ".join(str(exc).split()))]
    return BackendsReport(
        order=list(order),
        chosen=chosen,
        attempts=attempts,
        fallbacks=[f.describe() for f in fallbacks()],
    )
