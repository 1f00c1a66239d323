"""Pick the hardware profile for the probed facts, and say why in words.

A profile matches when all its rules hold. Of the matching specific profiles
the one with the most rules wins (ties: higher ``priority``, then name).
Fallback profiles (``fallback: true``) are considered only when no specific
one matches; their reason says what was seen and that nothing more specific
fits. ``--profile NAME`` overrides the choice and the reason says so.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from appliance.device.facts import HardwareFacts
from appliance.device.profile import HardwareProfile
from appliance.device.rules import RuleOutcome, check_rule
from appliance.errors import ConfigError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Candidate:
    """How one profile fared against the facts."""

    profile: HardwareProfile
    outcomes: tuple[RuleOutcome, ...]

    @property
    def name(self) -> str:
        return self.profile.name

    @property
    def matched(self) -> bool:
        return all(o.ok for o in self.outcomes)

    @property
    def score(self) -> int:
        return len(self.outcomes)

    def failed(self) -> list[str]:
        return [f"{o.rule}={o.wanted!r} but {o.seen}" for o in self.outcomes if not o.ok]

    def evidence(self) -> str:
        seen: list[str] = []
        for outcome in self.outcomes:
            if outcome.ok and outcome.seen not in seen:
                seen.append(outcome.seen)
        return _and(seen)


@dataclass(frozen=True)
class MatchResult:
    """The chosen profile, the facts it was chosen on, and why."""

    profile: HardwareProfile
    facts: HardwareFacts
    reason: str
    overridden: bool
    candidates: tuple[Candidate, ...]


def _and(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def evaluate(profile: HardwareProfile, facts: HardwareFacts) -> Candidate:
    outcomes = tuple(
        check_rule(rule, wanted, facts) for rule, wanted in profile.match.rules().items()
    )
    return Candidate(profile, outcomes)


def _rank(candidate: Candidate) -> tuple[int, int, str]:
    return (-candidate.score, -candidate.profile.priority, candidate.name)


def _best(candidates: tuple[Candidate, ...], facts: HardwareFacts) -> tuple[Candidate, str]:
    specific = sorted((c for c in candidates if c.matched and not c.profile.fallback), key=_rank)
    if specific:
        best = specific[0]
        return best, best.evidence()
    fallbacks = sorted((c for c in candidates if c.matched and c.profile.fallback), key=_rank)
    if not fallbacks:
        raise ConfigError(
            f"no hardware profile matches this device ({facts.summary()}) and no fallback "
            "profile applies; add one with `fallback: true` or pass --profile NAME"
        )
    best = fallbacks[0]
    what = "nothing recognisable found" if not facts.recognisable() else "no specific profile fits"
    return best, f"{what} ({facts.summary()}); {best.name} is the fallback"


def _override(
    name: str, candidates: tuple[Candidate, ...], facts: HardwareFacts
) -> tuple[Candidate, str]:
    by_name = {c.name: c for c in candidates}
    if name not in by_name:
        known = ", ".join(sorted(by_name))
        raise ConfigError(f"unknown hardware profile {name!r} (known: {known})")
    chosen = by_name[name]
    reason = f"chosen with --profile {name}"
    if chosen.matched:
        reason += f"; its rules hold ({chosen.evidence() or 'it has none'})"
    else:
        reason += "; its rules do not hold here: " + "; ".join(chosen.failed())
    try:
        auto, _ = _best(candidates, facts)
    except ConfigError:
        return chosen, reason
    if auto.name != name:
        reason += f"; the probe alone would pick {auto.name}"
    return chosen, reason


def match_profile(
    profiles: Mapping[str, HardwareProfile],
    facts: HardwareFacts,
    override: str | None = None,
) -> MatchResult:
    """The most specific matching profile, or ``override`` when given."""
    candidates = tuple(evaluate(p, facts) for _, p in sorted(profiles.items()))
    if override:
        chosen, reason = _override(override, candidates, facts)
    else:
        chosen, reason = _best(candidates, facts)
    logger.info("hardware profile %s: %s", chosen.name, reason)
    return MatchResult(
        profile=chosen.profile,
        facts=facts,
        reason=reason,
        overridden=bool(override),
        candidates=candidates,
    )
