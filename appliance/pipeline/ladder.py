"""The degrade ladder's decisions: when to step quality down, and when back up.

Fed one sample per processed frame (when it finished, how long it took),
``evaluate`` compares the output rate over the last ``window_s`` with the
target (or the input rate, when the camera itself is slower):

- down one level when the output stays more than ``tolerance`` under the
  target for ``degrade_after_s``;
- up one level when the level above is predicted to fit in ``headroom`` of a
  frame period for ``recover_after_s``. The prediction is the cost per frame
  now, times the cost ratio between the two levels when one is known;
- a fall within ``probation_s`` of a climb (the level above was too slow for
  its own sake, not because of a passing load) measures that ratio, so the
  climb is not tried again while the ratio holds (``relearn_after_s``), and
  doubles the time the next climb waits (up to ``max_recover_s``); a climb
  that holds resets it. Ratios are learned only from such falls: across the
  first step down a load that passes mid-window would fake a large saving
  and keep the quality down for good.

After every change (and after ``pause``) nothing is decided until a whole
window of samples at the new level has been seen.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass

from appliance.errors import ConfigError

logger = logging.getLogger(__name__)

NS = 1_000_000_000


@dataclass(frozen=True)
class LadderTiming:
    """How quickly the ladder reacts (seconds) and how much margin it wants."""

    window_s: float = 2.0
    degrade_after_s: float = 3.0
    recover_after_s: float = 10.0
    max_recover_s: float = 160.0
    probation_s: float = 30.0
    relearn_after_s: float = 1800.0
    tolerance: float = 0.1
    headroom: float = 0.7

    def __post_init__(self) -> None:
        if not 0 < self.window_s <= self.degrade_after_s:
            raise ConfigError(f"ladder window must be in (0, degrade_after_s], got {self}")
        if not 0 < self.recover_after_s <= self.max_recover_s:
            raise ConfigError(f"ladder recover_after_s must be in (0, max_recover_s], got {self}")
        if not (0 < self.tolerance < 1 and 0 < self.headroom <= 1):
            raise ConfigError(f"ladder tolerance and headroom must be in (0, 1), got {self}")


@dataclass(frozen=True)
class Step:
    """A decided change of level, with its reason."""

    level: int
    reason: str


class DegradeLadder:
    """Level 0 (full quality) to ``levels - 1``; one instance per pipeline thread."""

    def __init__(
        self, levels: int, target_fps: float, timing: LadderTiming | None = None, now_ns: int = 0
    ) -> None:
        if levels < 1:
            raise ConfigError(f"a ladder needs at least one level, got {levels}")
        if not target_fps > 0:
            raise ConfigError(f"target fps must be > 0, got {target_fps}")
        self.levels = levels
        self.target_fps = target_fps
        self.timing = timing or LadderTiming()
        self.level = 0
        self._hold_s = self.timing.recover_after_s
        self._samples: deque[tuple[int, float]] = deque()
        self._since_ns = now_ns
        self._below_since: int | None = None
        self._fits_since: int | None = None
        self._climbed_at: int | None = None
        self._ratios: dict[int, tuple[float, int]] = {}  # level -> (cost ratio to level-1, when)
        self._cost_before_step: float | None = None

    def sample(self, done_ns: int, process_ms: float) -> None:
        """A frame finished processing at ``done_ns`` after ``process_ms``."""
        self._samples.append((done_ns, process_ms))

    def pause(self, now_ns: int) -> None:
        """Forget the samples (idle mode began or ended); wait a window before deciding."""
        self._samples.clear()
        self._restart(now_ns)

    def evaluate(self, now_ns: int, input_fps: float) -> Step | None:
        """The step to take now, if any (the ladder's level is already changed)."""
        window_ns = round(self.timing.window_s * NS)
        while self._samples and self._samples[0][0] <= now_ns - window_ns:
            self._samples.popleft()
        if now_ns - self._since_ns < window_ns or not self._samples:
            return None
        output_fps = len(self._samples) / self.timing.window_s
        cost_ms = sum(ms for _, ms in self._samples) / len(self._samples)
        target = min(self.target_fps, input_fps) if input_fps > 0 else self.target_fps
        self._note_ratio(now_ns, cost_ms)
        self._note_probation(now_ns)
        if output_fps < target * (1 - self.timing.tolerance):
            self._fits_since = None
            return self._maybe_down(now_ns, output_fps, target, cost_ms)
        self._below_since = None
        return self._maybe_up(now_ns, cost_ms, target)

    # ---- internals -------------------------------------------------------------------------

    def _maybe_down(
        self, now_ns: int, output_fps: float, target: float, cost: float
    ) -> Step | None:
        if self._below_since is None:
            self._below_since = now_ns
        below_s = (now_ns - self._below_since) / NS
        if below_s < self.timing.degrade_after_s or self.level >= self.levels - 1:
            return None
        if self._climbed_at is not None:  # the last climb did not hold: wait longer next time
            self._hold_s = min(self._hold_s * 2, self.timing.max_recover_s)
            self._climbed_at = None
            self._cost_before_step = cost  # and learn what this level costs
        return self._change(
            now_ns,
            self.level + 1,
            f"output {output_fps:.1f} fps under the {target:.1f} fps target for {below_s:.1f} s",
        )

    def _maybe_up(self, now_ns: int, cost_ms: float, target: float) -> Step | None:
        if self.level == 0:
            return None
        predicted = cost_ms * self._ratio(now_ns)
        budget = self.timing.headroom * 1e3 / target
        if predicted > budget:
            self._fits_since = None
            return None
        if self._fits_since is None:
            self._fits_since = now_ns
        fits_s = (now_ns - self._fits_since) / NS
        if fits_s < self._hold_s:
            return None
        self._climbed_at = now_ns
        return self._change(
            now_ns,
            self.level - 1,
            f"level {self.level - 1} predicted at {predicted:.1f} ms a frame, within "
            f"{budget:.1f} ms, for {fits_s:.1f} s",
        )

    def _ratio(self, now_ns: int) -> float:
        """How much more the level above costs than this one: learned, or 1 (unknown)."""
        ratio, learned_ns = self._ratios.get(self.level, (1.0, now_ns))
        return ratio if now_ns - learned_ns < self.timing.relearn_after_s * NS else 1.0

    def _note_ratio(self, now_ns: int, cost_ms: float) -> None:
        """The first measurement after a failed climb's fall gives that step's cost ratio."""
        if self._cost_before_step is not None and cost_ms > 0:
            self._ratios[self.level] = (max(1.0, self._cost_before_step / cost_ms), now_ns)
            self._cost_before_step = None

    def _note_probation(self, now_ns: int) -> None:
        """A climb that held for ``probation_s`` resets the climb hold time."""
        if (
            self._climbed_at is not None
            and now_ns - self._climbed_at >= self.timing.probation_s * NS
        ):
            self._climbed_at = None
            self._hold_s = self.timing.recover_after_s

    def _change(self, now_ns: int, level: int, reason: str) -> Step:
        self.level = level
        self._samples.clear()
        self._restart(now_ns)
        return Step(level, reason)

    def _restart(self, now_ns: int) -> None:
        self._since_ns = now_ns
        self._below_since = None
        self._fits_since = None
