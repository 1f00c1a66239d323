"""The asynchronous, frame-dropping live pipeline: capture, process, outputs.

Threads: one capture thread reading the source into a latest-wins slot (a
slow processor never makes frames pile up), one processing thread, and one
thread per sink, each fed by its own latest-wins slot (a slow sink never
holds up capture, processing or the other sinks). See ``stage`` for the
per-frame rules: staleness, capture order, the processor's error policy.

The runner owns the source and the sinks: ``start()`` starts them, and each
is closed when its thread ends (end of source, frame limit, or ``stop()``).
A runner runs once.

Telemetry stages (ms): ``queue`` (capture to processing start), ``process``
(the whole ``process()`` call), the processor's own ``timings_ms`` stages,
and ``sink:<name>`` (one ``write()``); ``e2e_ms`` is capture to hand-off
to the sink slots, each sink's ``e2e_ms`` capture to its ``write()``.
Error stages: ``capture``, ``process``, ``sink:<name>``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence

from appliance.errors import ConfigError
from appliance.media.frames import Frame
from appliance.media.sink_base import FrameSink
from appliance.media.source_base import FrameSource
from appliance.pipeline.capture_worker import CaptureWorker
from appliance.pipeline.garbage import settle_garbage
from appliance.pipeline.process_worker import ProcessWorker
from appliance.pipeline.sink_worker import SinkWorker
from appliance.pipeline.slots import LatestSlot
from appliance.pipeline.snapshot import TelemetrySnapshot
from appliance.pipeline.stage import Controller, Processor, StageContext, close_quietly
from appliance.pipeline.telemetry import Telemetry
from appliance.running import Lifecycle

logger = logging.getLogger(__name__)

Worker = CaptureWorker | ProcessWorker | SinkWorker

THREAD_PREFIX = "mirror-"
GRACE_SHARE = 0.25  # share of stop()'s timeout the threads get before their resources are closed


def sink_names(sinks: Sequence[FrameSink]) -> list[str]:
    """Each sink's class name, with ``-2``, ``-3``... on repeats."""
    seen: Counter[str] = Counter()
    names = []
    for sink in sinks:
        base = type(sink).__name__
        seen[base] += 1
        names.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return names


def _check(latency_budget_ms: float, frame_limit: int | None, read_timeout_s: float) -> None:
    if not latency_budget_ms > 0:
        raise ConfigError(f"latency budget must be > 0 ms, got {latency_budget_ms}")
    if frame_limit is not None and frame_limit < 1:
        raise ConfigError(f"frame limit must be at least 1, got {frame_limit}")
    if not 0 < read_timeout_s <= 1.0:
        raise ConfigError(f"read timeout must be in (0, 1] s, got {read_timeout_s}")


class PipelineRunner(Lifecycle):
    """Runs ``source -> processor -> sinks`` on threads, newest frame first.

    ``latency_budget_ms``: a frame older than this is never shown.
    ``frame_limit``: stop reading after this many captured frames.
    ``read_timeout_s``: the longest a single ``source.read()`` is asked to wait.
    ``capture_slots``/``sink_slots``: slot capacities (1 or 2).
    ``keep_original``: copy each captured image before processing so a frame
    whose processing raised goes on unswapped (otherwise it is dropped).
    ``gap_after_s``: without frames this long the camera counts as disconnected.
    ``max_backoff_s``: the longest pause of a stage that keeps failing.
    ``controller``: adaptive quality (idle mode, degrade ladder), if any.

    A runner runs once (``restartable`` is False): ``stop()`` ends it for good.
    """

    restartable = False

    def __init__(
        self,
        source: FrameSource,
        processor: Processor,
        sinks: Sequence[FrameSink],
        telemetry: Telemetry,
        latency_budget_ms: float = 200.0,
        *,
        frame_limit: int | None = None,
        read_timeout_s: float = 0.1,
        capture_slots: int = 1,
        sink_slots: int = 1,
        keep_original: bool = True,
        gap_after_s: float = 1.0,
        max_backoff_s: float = 1.0,
        controller: Controller | None = None,
        on_camera: Callable[[bool], None] | None = None,  # camera lost/back, from capture
    ) -> None:
        _check(latency_budget_ms, frame_limit, read_timeout_s)
        super().__init__()
        self.telemetry = telemetry
        self.latency_budget_ms = latency_budget_ms
        self._stop = threading.Event()
        ctx = StageContext(telemetry, self._stop, latency_budget_ms, max_backoff_s)
        self._capture = CaptureWorker(
            ctx,
            source,
            read_timeout_s=read_timeout_s,
            gap_after_s=gap_after_s,
            frame_limit=frame_limit,
            capacity=capture_slots,
            on_camera=on_camera,
        )
        names = sink_names(sinks)
        self._sinks = [SinkWorker(ctx, n, s, sink_slots) for n, s in zip(names, sinks, strict=True)]
        self._process = ProcessWorker(
            ctx,
            processor,
            self._capture.out,
            self._sinks,
            keep_original=keep_original,
            controller=controller,
        )
        self._lock = threading.Lock()
        self._threads: list[tuple[Worker, threading.Thread]] = []
        self._live = 0
        self._crash = ""
        self._stop_requested = False
        for name in names:
            telemetry.add_sink(name)

    def __repr__(self) -> str:
        return f"PipelineRunner({self._capture.source!r}, {self._state})"

    # ---- inspection ------------------------------------------------------------------------

    @property
    def sink_names(self) -> list[str]:
        return [w.name for w in self._sinks]

    @property
    def slots(self) -> dict[str, LatestSlot[Frame]]:
        """Every hand-off slot by name (``capture``, ``sink:<name>``), for inspection."""
        slots = {"capture": self._capture.out}
        slots.update({f"sink:{w.name}": w.slot for w in self._sinks})
        return slots

    @property
    def running(self) -> bool:
        """Started, and some thread is still working."""
        return any(t.is_alive() for _, t in self._threads)

    @property
    def end_reason(self) -> str:
        """Why the run ended (empty while it runs)."""
        if self._crash:
            return self._crash
        if self._stop_requested:
            return "stop requested"
        return self._capture.end_reason

    def snapshot(self) -> TelemetrySnapshot:
        return self.telemetry.snapshot()

    # ---- control ---------------------------------------------------------------------------

    def _on_start(self) -> None:
        """Start the source, the sinks and the threads; raises if the source cannot start."""
        with self._lock:
            settle_garbage()  # before the source starts: no frame waits for it
            self._open_resources()
            workers: list[Worker] = [self._capture, self._process, *self._sinks]
            self._threads = [(w, self._thread(w)) for w in workers]
            self._live = len(self._threads)
            self.telemetry.set_running(True, "started")
            for _, thread in self._threads:
                thread.start()

    def _on_stop(self) -> None:
        with self._lock:
            self._stop_requested = self._stop_requested or self._live > 0
        self._halt()

    def _join(self, timeout_s: float) -> bool:
        """Stop every thread and release the source and sinks within ``timeout_s``.

        Threads get a quarter of the time to finish; the source or sink under
        any thread still busy is then closed from a helper thread to unblock
        it. True when every thread has been joined.
        """
        deadline = time.monotonic() + timeout_s
        self._join_until(min(deadline, time.monotonic() + timeout_s * GRACE_SHARE))
        closers = [self._closer(w) for w, t in self._threads if t.is_alive()]
        self._join_until(deadline, [c for c in closers if c is not None])
        self.telemetry.set_running(False, self.end_reason or "stopped")
        stuck = [t.name for _, t in self._threads if t.is_alive()]
        if stuck:
            logger.warning("%r: threads %s did not stop within %.1f s", self, stuck, timeout_s)
        return not stuck

    def _on_close(self) -> None:
        if not self._threads:  # never ran: the source and sinks are still ours to close
            self._close_resources()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the run ends (end of source, frame limit); True when it has."""
        if not self._begun:
            raise RuntimeError(f"{self!r} was not started")
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self._join_until(deadline)
        return not self.running

    def run_for(
        self, frames: int | None = None, timeout_s: float | None = None
    ) -> TelemetrySnapshot:
        """Run until ``frames`` frames were captured (or the source ends, or
        ``timeout_s`` passes), stop, and return the final telemetry."""
        if self._begun:
            raise RuntimeError(f"{self!r} runs once; build a new PipelineRunner")
        if frames is not None:
            _check(self.latency_budget_ms, frames, self._capture.read_timeout_s)
            self._capture.frame_limit = frames
        self.start()
        try:
            self.wait(timeout_s)
        finally:
            self.stop()
        return self.telemetry.snapshot()

    # ---- internals -------------------------------------------------------------------------

    @property
    def _state(self) -> str:
        if self.started:
            return "running"
        return "stopped" if self._begun else "new"

    def _open_resources(self) -> None:
        try:
            self._capture.source.start()
            for worker in self._sinks:
                worker.sink.start()
        except BaseException:
            self._close_resources()
            raise

    def _close_resources(self) -> None:
        close_quietly(self._capture.source, "source")
        for worker in self._sinks:
            close_quietly(worker.sink, "sink")

    def _thread(self, worker: Worker) -> threading.Thread:
        return threading.Thread(
            target=self._work, args=(worker,), name=f"{THREAD_PREFIX}{worker.name}", daemon=True
        )

    def _work(self, worker: Worker) -> None:
        try:
            worker.run()
        except Exception as exc:
            logger.exception("%r: the %s thread failed; stopping the pipeline", self, worker.name)
            self._crash = f"{worker.name} thread failed: {type(exc).__name__}: {exc}"
            self._halt()
        finally:
            self._worker_done()

    def _worker_done(self) -> None:
        with self._lock:
            self._live -= 1
            last = self._live == 0
        if last:
            self.telemetry.set_running(False, self.end_reason or "finished")

    def _halt(self) -> None:
        """Ask every thread to finish: set the stop event and close every slot."""
        self._stop.set()
        for slot in self.slots.values():
            slot.close()

    def _join_until(self, deadline: float | None, extra: Sequence[threading.Thread] = ()) -> None:
        for thread in [t for _, t in self._threads] + list(extra):
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            thread.join(remaining)

    def _closer(self, worker: Worker) -> threading.Thread | None:
        """Close the resource under a busy thread from a helper thread (it may block)."""
        if worker.resource is None:
            return None
        closer = threading.Thread(
            target=close_quietly,
            args=(worker.resource, worker.name),
            name=f"{THREAD_PREFIX}close-{worker.name}",
            daemon=True,
        )
        closer.start()
        return closer
