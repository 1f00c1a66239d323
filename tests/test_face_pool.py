"""Faces over two cores (issue 17): pairs side by side, an odd face alone on every core.

``FacePool.map`` runs faces two at a time (the calling thread and the helper,
one core each) and a last odd face on its own, when nothing else of the pool
runs; its landmarks then come from an interpreter with a thread per usable CPU
(the model alone: 3.7 ms on two threads against 7.9 on one, measured by the
benchmark, not here). The lone face's landmarks are the same as one thread's.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from appliance.config import Settings
from appliance.inference.litert import LiteRTModel
from appliance.media.frames import Frame
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_processor
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.face_pool import ALONE, CALLER, HELPER, FacePool, usable_cpus
from appliance.vision.roi import roi_from_landmarks

two_cpus = pytest.mark.skipif(usable_cpus() < 2, reason="needs two usable CPUs")


@two_cpus
def test_pairs_side_by_side_and_the_odd_face_alone() -> None:
    seen: list[tuple[int, int, str]] = []

    def work(worker: int, item: int) -> int:
        seen.append((item, worker, threading.current_thread().name))
        return item * 10

    pool = FacePool()
    assert pool.map(work, [0, 1, 2]) == [0, 10, 20]
    by_item = {item: (worker, thread) for item, worker, thread in seen}
    me = threading.current_thread().name
    assert by_item[0] == (CALLER, me)
    assert by_item[1][0] == HELPER and by_item[1][1].startswith("faces")
    assert by_item[2] == (ALONE, me)  # after the pair: every core is free for it
    seen.clear()
    assert pool.map(work, [5]) == [50]
    assert seen == [(5, ALONE, me)]
    pool.close()


def test_one_cpu_runs_faces_in_turn() -> None:
    workers: list[int] = []
    pool = FacePool(parallel=False)
    pool.map(lambda w, i: workers.append(w), [0, 1, 2])
    assert workers == [CALLER] * 3


@two_cpus
def test_a_lone_face_gets_a_wide_interpreter_with_the_same_landmarks(
    analyzer: FaceAnalyzer, astronaut: np.ndarray
) -> None:
    caller = analyzer.landmarks_on(CALLER)
    wide = analyzer.landmarks_on(ALONE)
    assert isinstance(caller.model, LiteRTModel) and isinstance(wide.model, LiteRTModel)
    assert caller.model.num_threads == 1
    assert wide.model.num_threads == min(usable_cpus(), 4)
    assert analyzer.landmarks_on(ALONE) is wide  # loaded once
    assert analyzer.landmarks_on(HELPER).model is not caller.model  # its own interpreter
    faces = analyzer.analyze(astronaut)
    roi = roi_from_landmarks(faces[0].points)
    one, many = caller.run(astronaut, roi), wide.run(astronaut, roi)
    assert one.presence > 0.5
    assert np.abs(one.points - many.points).max() < 0.05


@two_cpus
def test_the_wide_interpreter_is_loaded_with_the_processor_not_on_the_first_face(
    store: ModelStore, astronaut: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[tuple[str, int]] = []
    with_threads = LiteRTModel.with_threads

    def counted(self: LiteRTModel, num_threads: int) -> LiteRTModel:
        loads.append((self.path.name, num_threads))
        return with_threads(self, num_threads)

    monkeypatch.setattr(LiteRTModel, "with_threads", counted)
    processor = build_processor(Settings(), store, "grace_hopper")
    threads = min(usable_cpus(), 4)
    # the attention model, and the light landmarks' two models (small faces)
    names = ["face_landmarks_detector.tflite", "face_landmark.tflite", "iris_landmark.tflite"]
    assert sorted(loads) == sorted((name, threads) for name in names)
    processor.process(Frame(astronaut.copy(), 0, 0))  # a small face: the light models
    assert len(loads) == 3
