"""A multi-threaded interpreter's workers kept off its caller's CPU (``inference.spread``).

Real threads and the real landmark model: the worker threads an interpreter
starts are found, and before each run they are allowed every CPU of the
caller's but the one it is on. (What that saves is the benchmark's to
measure: 4.5 -> 2.7 ms for the landmark model paced at 30 fps here.)
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import pytest

from appliance.inference.litert import LiteRTModel
from appliance.inference.spread import Spread, current_cpu, started_by, thread_ids
from appliance.modelstore import ModelStore
from appliance.vision.face_pool import usable_cpus

two_cpus = pytest.mark.skipif(usable_cpus() < 2, reason="needs two usable CPUs")
linux = pytest.mark.skipif(current_cpu() is None, reason="needs sched_getcpu and /proc")


@pytest.fixture
def sleeper() -> Iterator[int]:
    """A real thread waiting on an event; its native id."""
    done = threading.Event()
    started = threading.Event()
    ids: list[int] = []

    def wait() -> None:
        ids.append(threading.get_native_id())
        started.set()
        done.wait()

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    started.wait()
    yield ids[0]
    done.set()
    thread.join()


@contextmanager
def holding_to_one_cpu(cpu: int | None = None) -> Iterator[int]:
    """The calling thread held to ``cpu`` (its first allowed CPU by default), so it
    cannot move mid-test; threads it starts meanwhile inherit that one CPU."""
    allowed = os.sched_getaffinity(0)
    cpu = min(allowed) if cpu is None else cpu
    os.sched_setaffinity(0, {cpu})
    try:
        yield cpu
    finally:
        os.sched_setaffinity(0, allowed)


def from_a_held_caller(run: Callable[[], None], cpu: int | None = None) -> int:
    """``run()`` called from a thread held to one CPU (the process, its main thread, left
    free, as in the mirror: the processing thread calls the models); that CPU."""
    held: list[int] = []

    def call() -> None:
        with holding_to_one_cpu(cpu) as cpu_held:
            run()
            held.append(cpu_held)

    caller = threading.Thread(target=call)
    caller.start()
    caller.join()
    return held[0]


@linux
def test_the_threads_a_call_starts_are_found() -> None:
    done = threading.Event()
    threads: list[threading.Thread] = []

    def start() -> str:
        thread = threading.Thread(target=done.wait, daemon=True)
        thread.start()
        threads.append(thread)
        return "started"

    result, new = started_by(start, 1)
    assert result == "started"
    assert new == [threads[0].native_id]
    assert new[0] in thread_ids()
    done.set()
    threads[0].join()


@linux
def test_an_unexpected_count_of_threads_spreads_none() -> None:
    done = threading.Event()

    def start_two() -> None:
        for _ in range(2):
            threading.Thread(target=done.wait, daemon=True).start()

    assert started_by(start_two, 1)[1] == []  # two started, one expected: not trusted
    assert started_by(lambda: None, 1)[1] == []
    done.set()


@linux
@two_cpus
def test_workers_are_moved_off_the_callers_cpu(sleeper: int) -> None:
    allowed = os.sched_getaffinity(0)
    cpu = from_a_held_caller(Spread([sleeper]).before_run)
    assert os.sched_getaffinity(sleeper) == allowed - {cpu}


@linux
@two_cpus
def test_the_workers_follow_the_caller_from_cpu_to_cpu(sleeper: int) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    spread = Spread([sleeper])
    for cpu in (allowed[-1], allowed[0], allowed[-1]):
        assert from_a_held_caller(spread.before_run, cpu) == cpu
        assert os.sched_getaffinity(sleeper) == set(allowed) - {cpu}


@linux
def test_a_process_held_to_one_cpu_stays_held() -> None:
    with holding_to_one_cpu() as cpu:  # the main thread: what ``--cores 1`` does
        done = threading.Event()
        worker = threading.Thread(target=done.wait, daemon=True)
        worker.start()  # it inherits the one CPU
        assert worker.native_id is not None
        Spread([worker.native_id]).before_run()
        assert os.sched_getaffinity(worker.native_id) == {cpu}  # nowhere else to go
        done.set()
        worker.join()


@linux
def test_a_worker_that_ended_is_forgotten() -> None:
    thread = threading.Thread(target=lambda: None)
    thread.start()
    thread.join()
    assert thread.native_id is not None
    # join() returns as Python's thread finishes; the OS thread ends a moment later
    deadline = time.monotonic() + 5.0
    while thread.native_id in thread_ids() and time.monotonic() < deadline:
        time.sleep(0.001)
    spread = Spread([thread.native_id])
    spread.before_run()
    assert spread.workers == []


@linux
@two_cpus
def test_the_two_thread_landmark_model_runs_its_worker_on_another_cpu(
    store: ModelStore,
) -> None:
    model = LiteRTModel(store.path("face_landmarks"), num_threads=2)
    workers = model._spread.workers
    assert len(workers) == 1  # the XNNPACK pool's one worker beside the caller
    feeds = [np.zeros(spec.shape, np.float32) for spec in model.inputs]
    outputs: list[np.ndarray] = []
    cpu = from_a_held_caller(lambda: outputs.extend(model.run(feeds)))
    assert len(outputs) == len(model.outputs)
    assert cpu not in os.sched_getaffinity(workers[0])
    single = LiteRTModel(store.path("face_landmarks"), num_threads=1)
    assert single._spread.workers == []  # nothing to spread
    model.close()
    assert model._spread.workers == []
