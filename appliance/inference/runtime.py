"""The runtime choice: which profile, which backend, which file per role, what rate, and why.

``choose_runtime(match, store)`` takes a matched profile (``match_profile``),
tries its backends in order (``choose_backend``), and resolves every role's
model to the file that runs and the backend that runs it
(``runtime_models``), plus ``confirm``: the full-range detector that confirms
each detection, in the form the profile's detector has. ``choose_for_device``
probes the device first. ``mirror run`` and ``mirror doctor`` both go through
``choose_runtime``, so they cannot disagree.

The result is a frozen :class:`RuntimeChoice`; ``describe()`` gives its plain
lines, and ``fallbacks`` every backend and model that was asked for and not used.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from appliance.backend_names import ONNX_BACKENDS
from appliance.config import Settings
from appliance.device.catalog import load_profiles
from appliance.device.facts import HardwareFacts
from appliance.device.match import MatchResult, match_profile
from appliance.device.probe import probe
from appliance.device.profile import HardwareProfile
from appliance.device.support import refusal
from appliance.errors import ConfigError, NotRunnableError
from appliance.inference.base import Backend
from appliance.inference.fallbacks import Fallback
from appliance.inference.litert import LiteRTBackend
from appliance.inference.routed_backend import RoutedBackend
from appliance.inference.runtime_models import (
    Resolver,
    RoleChoice,
    confirm_model,
)
from appliance.inference.select import FALLBACK_SUBJECT, Attempt, choose_backend
from appliance.modelstore import ModelStore
from appliance.modelstore.onnx_variants import OnnxVariants

logger = logging.getLogger(__name__)


class AttemptLike(Protocol):
    """``appliance.inference.select.Attempt``: one backend tried, and how it went."""

    @property
    def name(self) -> str: ...

    @property
    def ok(self) -> bool: ...

    @property
    def reason(self) -> str: ...


# ``choose_backend``'s shape; tests inject a chooser for outcomes this machine cannot give.
Chooser = Callable[[Sequence[str]], tuple[Any, Sequence[AttemptLike]]]


@dataclass(frozen=True)
class RuntimeChoice:
    """What the mirror runs on this device, and why."""

    profile: str
    description: str
    why: str
    overridden: bool
    backend: str
    attempts: tuple[Attempt, ...]
    roles: tuple[RoleChoice, ...]
    target_fps: float
    fallbacks: tuple[Fallback, ...]
    engine: Any = field(default=None, compare=False, repr=False)  # the chosen backend object

    def role(self, name: str) -> RoleChoice:
        for role in self.roles:
            if role.role == name:
                return role
        raise ConfigError(f"no role {name!r} in the runtime choice")

    def onnx_backend(self) -> Backend | None:
        """The chosen backend when it is onnxruntime-based (tensorrt, cuda, onnx-cpu)."""
        if self.backend not in ONNX_BACKENDS:
            return None
        engine: Backend = self.engine
        return engine

    def analyzer_backend(self, store: ModelStore) -> Backend:
        """Loads each analyzer model the way its role was resolved (others on LiteRT)."""
        return RoutedBackend(self.roles, store, LiteRTBackend())

    def describe(self, config_fps: float | None = None) -> list[str]:
        """A few plain lines; ``config_fps``: the config file's target rate, when it sets one."""
        chosen = next((a for a in self.attempts if a.name == self.backend), None)
        how = f": {chosen.reason}" if chosen else ""
        lines = [
            f"profile     {self.profile}{' (--profile)' if self.overridden else ''}: {self.why}",
            f"backend     {self.backend}{how}",
        ]
        lines += [f"  skipped   {a.name}: {a.reason}" for a in self.attempts if not a.ok]
        lines += [role.describe() for role in self.roles]
        if config_fps is None:
            lines.append(f"target      {self.target_fps:g} fps, the profile's")
        else:
            lines.append(
                f"target      {config_fps:g} fps from the config file (pipeline.target_fps); "
                f"the profile's is {self.target_fps:g}"
            )
        return lines


def _attempts(tried: Sequence[AttemptLike]) -> tuple[Attempt, ...]:
    return tuple(Attempt(str(a.name), bool(a.ok), str(a.reason)) for a in tried)


def _chosen_name(engine: Any, attempts: tuple[Attempt, ...]) -> str:
    """The profile's name for the backend (``OnnxBackend.name`` is ``onnx-tensorrt``)."""
    ok = [a.name for a in attempts if a.ok]
    return ok[-1] if ok else str(getattr(engine, "name", engine))


def _roles(profile: HardwareProfile) -> dict[str, str]:
    roles = profile.models.by_role()
    detector = roles.pop("detector")
    return {"detector": detector, "confirm": confirm_model(detector), **roles}


def choose_runtime(
    match: MatchResult,
    store: ModelStore,
    *,
    chooser: Chooser | None = None,
    variants: OnnxVariants | None = None,
) -> RuntimeChoice:
    """Choose the backend in the profile's order and resolve every role; raises
    ``BackendError`` when no backend works."""
    profile = match.profile
    engine, tried = (chooser or choose_backend)(profile.backends)
    attempts = _attempts(tried)
    name = _chosen_name(engine, attempts)
    skipped = {a.name: a.reason for a in attempts if not a.ok}
    fallbacks = [Fallback(FALLBACK_SUBJECT, a, name, why) for a, why in skipped.items()]
    litert = engine if isinstance(engine, LiteRTBackend) else LiteRTBackend()
    resolver = Resolver(store, variants or OnnxVariants(store), name, engine, litert, skipped)
    roles: list[RoleChoice] = []
    for role, model in _roles(profile).items():
        resolved, fallback = resolver.resolve(role, model)
        roles.append(resolved)
        if fallback is not None:
            fallbacks.append(fallback)
    choice = RuntimeChoice(
        profile=profile.name,
        description=profile.description,
        why=match.reason,
        overridden=match.overridden,
        backend=name,
        attempts=attempts,
        roles=tuple(roles),
        target_fps=profile.target_fps,
        fallbacks=tuple(fallbacks),
        engine=engine,
    )
    for line in choice.describe():
        logger.info("runtime: %s", line)
    return choice


def choose_for_device(
    store: ModelStore,
    *,
    override: str | None = None,
    root: Path = Path("/"),
    profiles: Mapping[str, HardwareProfile] | None = None,
    prober: Callable[[Path], HardwareFacts] = probe,
    chooser: Chooser | None = None,
    variants: OnnxVariants | None = None,
) -> RuntimeChoice:
    """Probe the device under ``root``, match a profile (or take ``override``), choose.

    A device the mirror cannot run on (``device.support``: the Xavier NX, a JetPack
    older than 6) raises ``NotRunnableError``, which no restart mends."""
    match = match_profile(profiles or load_profiles(), prober(root), override)
    refused = refusal(match.profile, match.facts)
    if refused is not None:
        raise NotRunnableError(refused)
    return choose_runtime(match, store, chooser=chooser, variants=variants)


def config_target_fps(settings: Settings) -> float | None:
    """``pipeline.target_fps`` when the config file sets it (pydantic's fields set), else None."""
    pipeline = settings.pipeline
    return pipeline.target_fps if "target_fps" in pipeline.model_fields_set else None


def with_target_fps(settings: Settings, choice: RuntimeChoice) -> Settings:
    """The profile's target rate, unless the config file sets ``pipeline.target_fps``."""
    if config_target_fps(settings) is not None:
        return settings
    pipeline = settings.pipeline.model_copy(update={"target_fps": choice.target_fps})
    return settings.model_copy(update={"pipeline": pipeline})
