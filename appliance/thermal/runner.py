"""The thermal governor's thread: poll the sensors, decide, act, drive the fan, report.

Every ``poll_s`` seconds ``poll()`` reads every sensor, feeds the state
machine (``governor``) with the injected clock's time, and on a change of
state hands the new ``ThermalAction`` to ``on_action`` (the pipeline applies
it between frames). Each round also sets the fan and reports to telemetry
(``set_thermal``: state changes and sensor alerts become transitions, logged
there with their temperatures). A sensor failure is logged once when it
begins and once when it ends. The governor owns its sensors and fan: ``stop``
joins the thread and closes them (a governor runs once, see ``appliance.running``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from appliance.config import Settings
from appliance.device.profile import HardwareProfile
from appliance.pipeline.telemetry import Telemetry
from appliance.running import Lifecycle
from appliance.thermal.action import ThermalAction, action_for
from appliance.thermal.fan import Fan, open_fan
from appliance.thermal.governor import (
    Decision,
    GovernorConfig,
    ThermalState,
    ThermalStateMachine,
)
from appliance.thermal.sensors import ThermalSensor, close_all, open_sensors, read_all

logger = logging.getLogger(__name__)

THREAD_NAME = "mirror-thermal"
ActionSink = Callable[[ThermalAction], None]


class ThermalGovernor(Lifecycle):
    """Polls ``sensors`` on a thread (``start``/``stop``) or on demand (``poll``); runs once."""

    restartable = False  # stop() closes the sensors and the fan

    def __init__(
        self,
        sensors: Sequence[ThermalSensor],
        config: GovernorConfig,
        base: Settings,
        *,
        telemetry: Telemetry | None = None,
        fan: Fan | None = None,
        on_action: ActionSink | None = None,
        poll_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not poll_s > 0:
            raise ValueError(f"poll_s must be > 0, got {poll_s}")
        super().__init__()
        self.sensors = list(sensors)
        self.machine = ThermalStateMachine(config)
        self.base = base
        self.telemetry = telemetry
        self.fan = fan
        self.on_action = on_action
        self.poll_s = poll_s
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._action = action_for(ThermalState.NORMAL, base)
        self._last: Decision | None = None
        self._unmonitored_said = False

    def __repr__(self) -> str:
        return f"ThermalGovernor({len(self.sensors)} sensors, {self.state.label})"

    @property
    def state(self) -> ThermalState:
        return self.machine.state

    @property
    def action(self) -> ThermalAction:
        """The action in force (NORMAL's until a state change)."""
        return self._action

    @property
    def last(self) -> Decision | None:
        """The last round's decision (None before the first)."""
        return self._last

    # ---- one round -------------------------------------------------------------------------

    def poll(self) -> Decision:
        """Read, decide, act, set the fan, report; never raises for a sensor's sake."""
        with self._lock:
            readings = read_all(self.sensors)
            decision = self.machine.update(self._clock(), readings)
            self._note_alert(decision)
            if decision.changed:
                self._act(decision)
            duty = self._fan(decision)
            self._report(decision, duty)
            self._last = decision
            return decision

    def _note_alert(self, decision: Decision) -> None:
        before = self._last.alert if self._last is not None else ""
        if decision.alert and not before:
            logger.warning("thermal sensor failure: %s", decision.alert)
        elif before and not decision.alert:
            logger.info("thermal sensors read again")
        if decision.temperature_c is None and not decision.alert and not self._unmonitored_said:
            self._unmonitored_said = True
            logger.warning("no thermal sensor found: running unmonitored (not required here)")

    def _act(self, decision: Decision) -> None:
        self._action = action_for(decision.state, self.base)
        if self.telemetry is None:  # telemetry logs its transitions itself
            logger.info(
                "thermal: %s -> %s (%s)",
                decision.previous.label,
                decision.state.label,
                decision.reason,
            )
        logger.info("thermal %s: %s", decision.state.label, self._action.describe())
        if self.on_action is not None:
            try:
                self.on_action(self._action)
            except Exception:
                logger.exception("applying the thermal action failed")

    def _fan(self, decision: Decision) -> float | None:
        if self.fan is None:
            return None
        temperature_c = None if decision.alert else decision.temperature_c
        try:
            return self.fan.update(temperature_c)
        except Exception as exc:
            logger.warning("fan %s: %s", self.fan.pin, exc)
            return None

    def _report(self, decision: Decision, duty: float | None) -> None:
        if self.telemetry is None:
            return
        t = decision.temperature_c
        self.telemetry.set_thermal(
            decision.state.label,
            t,
            decision.reason or ("no reading" if t is None else f"{t:.1f} C"),
            alert=decision.alert,
            fan_duty=duty,
        )

    # ---- the thread ------------------------------------------------------------------------

    def _on_start(self) -> None:
        """Poll now and then every ``poll_s`` on a thread, until ``stop``."""
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._thread.start()

    def _on_stop(self) -> None:
        self._stop.set()

    def _join(self, timeout_s: float) -> bool:
        """Wait for the thread; True when it ended (``stop`` then closes the sensors and fan)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)
        stopped = thread is None or not thread.is_alive()
        if not stopped:
            logger.warning("%r did not stop within %.1f s", self, timeout_s)
        return stopped

    def _on_close(self) -> None:
        self._stop.set()
        with self._lock:
            close_all(self.sensors)
            if self.fan is not None:
                self.fan.close()
                self.fan = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception:
                logger.exception("thermal governor round failed")
            if self._stop.wait(self.poll_s):
                return


def governor_for(
    profile: HardwareProfile,
    settings: Settings,
    *,
    telemetry: Telemetry | None = None,
    on_action: ActionSink | None = None,
    root: Path = Path("/"),
    pin_factory: Any = None,
    clock: Callable[[], float] = time.monotonic,
) -> ThermalGovernor:
    """The governor for ``profile``'s sensors, thresholds and fan (not started)."""
    spec = profile.thermal
    return ThermalGovernor(
        open_sensors(spec, root),
        GovernorConfig.from_spec(spec),
        settings,
        telemetry=telemetry,
        fan=open_fan(profile, pin_factory=pin_factory),
        on_action=on_action,
        poll_s=spec.poll_s,
        clock=clock,
    )
