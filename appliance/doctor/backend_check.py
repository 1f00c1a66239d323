"""Backends for ``mirror doctor``: the runtime choice ``mirror run`` makes, as a report.

The choice is ``appliance.inference.runtime.choose_runtime`` (the profile's
backend order through ``choose_backend``, then every role's model resolved),
so the doctor and the running mirror cannot disagree. The chooser is
injectable for tests.
"""

from __future__ import annotations

import logging

from appliance.device.match import MatchResult
from appliance.device.report import AttemptReport, BackendsReport
from appliance.errors import MirrorError
from appliance.inference.fallbacks import fallbacks
from appliance.inference.runtime import AttemptLike, Chooser, RuntimeChoice, choose_runtime
from appliance.modelstore import ModelStore

logger = logging.getLogger(__name__)

__all__ = ["AttemptLike", "Chooser", "check_backends"]


def _fallback_lines(choice: RuntimeChoice | None) -> list[str]:
    """The choice's fallbacks first, then any other recorded in this process."""
    lines = [f.describe() for f in choice.fallbacks] if choice else []
    lines += [text for text in (f.describe() for f in fallbacks()) if text not in lines]
    return lines


def check_backends(
    match: MatchResult, store: ModelStore, chooser: Chooser | None = None
) -> tuple[RuntimeChoice | None, BackendsReport]:
    """The runtime choice for ``match`` and its report; no choice when no backend works."""
    order = list(match.profile.backends)
    try:
        choice = choose_runtime(match, store, chooser=chooser)
    except MirrorError as exc:
        logger.info("no backend works: %s", exc)
        failed = AttemptReport(name="(all)", ok=False, reason=" ".join(str(exc).split()))
        report = BackendsReport(
            order=order, chosen=None, attempts=[failed], fallbacks=_fallback_lines(None)
        )
        return None, report
    attempts = [AttemptReport(name=a.name, ok=a.ok, reason=a.reason) for a in choice.attempts]
    report = BackendsReport(
        order=order,
        chosen=choice.backend,
        attempts=attempts,
        fallbacks=_fallback_lines(choice),
    )
    return choice, report
