"""The thermal governor's decisions: NORMAL -> WARM -> HOT -> CRITICAL, with hysteresis.

Pure logic, fed ``(now_s, readings)`` by whoever polls the sensors
(``governor_runner``), so a trace replays the same way at any speed:

- the hottest readable sensor decides;
- the state steps up at once, as far as the temperature says (a spike may
  go straight to CRITICAL): at a threshold or above it;
- it steps down one state at a time, and only after the temperature has
  stayed below that state's threshold minus ``hysteresis_c`` for ``hold_s``
  (every step, up or down, restarts the hold);
- a sensor failure (any sensor unreadable, or none with a temperature when
  sensors are ``required``) holds at least the conservative state (HOT) and
  raises an alert; with no temperature known the state never steps down.
  Missing and offline sensors (a glob matching nothing, Jetson's -256 C) are
  reported but are not failures while another sensor reads.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from appliance.device.profile import ThermalSpec
from appliance.errors import ConfigError
from appliance.thermal.sensors import Reading

logger = logging.getLogger(__name__)


class ThermalState(IntEnum):
    NORMAL = 0
    WARM = 1
    HOT = 2
    CRITICAL = 3

    @property
    def label(self) -> str:
        """Lower-case name, as telemetry shows it."""
        return self.name.lower()


CONSERVATIVE = ThermalState.HOT


@dataclass(frozen=True)
class GovernorConfig:
    """Thresholds (C, entered at or above), hysteresis (C) and hold time (s)."""

    warm_c: float
    hot_c: float
    critical_c: float
    hysteresis_c: float = 5.0
    hold_s: float = 30.0
    required: bool = True
    conservative: ThermalState = CONSERVATIVE

    def __post_init__(self) -> None:
        if not self.warm_c < self.hot_c < self.critical_c:
            raise ConfigError(f"thermal thresholds must rise, got {self}")
        if self.hysteresis_c < 0 or self.hold_s < 0:
            raise ConfigError(f"hysteresis and hold time must be >= 0, got {self}")

    @classmethod
    def from_spec(cls, spec: ThermalSpec) -> GovernorConfig:
        return cls(
            warm_c=spec.warm_c,
            hot_c=spec.hot_c,
            critical_c=spec.critical_c,
            hysteresis_c=spec.hysteresis_c,
            hold_s=spec.hold_s,
            required=spec.required,
        )

    def threshold(self, state: ThermalState) -> float:
        """Where ``state`` begins (NORMAL: minus infinity)."""
        return {
            ThermalState.NORMAL: -math.inf,
            ThermalState.WARM: self.warm_c,
            ThermalState.HOT: self.hot_c,
            ThermalState.CRITICAL: self.critical_c,
        }[state]

    def release(self, state: ThermalState) -> float:
        """Below this (for ``hold_s``) ``state`` steps down."""
        return self.threshold(state) - self.hysteresis_c

    def state_for(self, temperature_c: float) -> ThermalState:
        """The highest state whose threshold ``temperature_c`` reaches."""
        return max(s for s in ThermalState if temperature_c >= self.threshold(s))


@dataclass(frozen=True)
class Assessment:
    """What one round of readings says: the hottest temperature and any failure."""

    temperature_c: float | None
    hottest: str  # the path of the hottest reading ("" without one)
    failure: str  # why the readings cannot be trusted ("" when they can)


def assess(readings: Sequence[Reading], required: bool = True) -> Assessment:
    """The hottest ``ok`` reading, and a failure when any is unreadable or, if
    ``required``, none gives a temperature."""
    temps = [(r.temperature_c, r.path) for r in readings if r.temperature_c is not None]
    hottest = max(temps, default=None)
    bad = [r for r in readings if r.status == "unreadable"]
    failure = ""
    if bad:
        failure = "unreadable: " + "; ".join(f"{r.path} ({r.detail})" for r in bad)
    elif hottest is None and required:
        seen = ", ".join(f"{r.path} ({r.status})" for r in readings) or "none configured"
        failure = f"no sensor gives a temperature: {seen}"
    if hottest is None:
        return Assessment(None, "", failure)
    return Assessment(hottest[0], hottest[1], failure)


@dataclass(frozen=True)
class Decision:
    """The state after one round, the state before it, and why."""

    state: ThermalState
    previous: ThermalState
    temperature_c: float | None
    hottest: str
    reason: str  # why the state changed ("" when it did not)
    alert: str  # the sensor failure, while there is one

    @property
    def changed(self) -> bool:
        return self.state != self.previous


def _c(value: float) -> str:
    return f"{value:.1f} C"


class ThermalStateMachine:
    """One governor's state; ``update`` once per round of readings (one thread)."""

    def __init__(self, config: GovernorConfig, state: ThermalState = ThermalState.NORMAL) -> None:
        self.config = config
        self.state = state
        self._below_since: float | None = None

    def update(self, now_s: float, readings: Sequence[Reading]) -> Decision:
        """Feed one round of readings taken at ``now_s`` (seconds, monotonic)."""
        seen = assess(readings, self.config.required)
        before = self.state
        reason = self._step(now_s, seen)
        return Decision(self.state, before, seen.temperature_c, seen.hottest, reason, seen.failure)

    def _step(self, now_s: float, seen: Assessment) -> str:
        floor = self.config.conservative if seen.failure else ThermalState.NORMAL
        t = seen.temperature_c
        up = max(floor, self.config.state_for(t) if t is not None else ThermalState.NORMAL)
        if up > self.state:
            self._change(up, now_s, t)
            if t is not None and self.config.state_for(t) == up:
                return f"{_c(t)} reached {up.label} ({self.config.threshold(up):g} C)"
            return f"sensor failure, assuming {up.label}: {seen.failure}"
        if self.state <= floor or t is None or t >= self.config.release(self.state):
            self._below_since = None
            return ""
        if self._below_since is None:
            self._below_since = now_s
        held_s = now_s - self._below_since
        if held_s < self.config.hold_s:
            return ""
        release = self.config.release(self.state)
        self._change(ThermalState(self.state - 1), now_s, t)
        return f"below {release:g} C for {held_s:.0f} s (now {_c(t)})"

    def _change(self, state: ThermalState, now_s: float, t: float | None) -> None:
        self.state = state
        below = t is not None and state > ThermalState.NORMAL and t < self.config.release(state)
        self._below_since = now_s if below else None
