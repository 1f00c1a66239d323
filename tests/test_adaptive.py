"""Adaptive quality with the real processor: idle mode, the degrade ladder, lower resolution.

The degrade test makes the real swap stage slow (a sleep added to it) and
then fast again; idle uses a clip of empty frames followed by the demo face.
Bounds on time are generous: nothing asserts a speed.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from appliance.config import PipelineSettings, Settings
from appliance.media.demo_source import DemoSource
from appliance.media.frames import Frame, Image
from appliance.media.null_sink import NullSink
from appliance.media.pacing import Pacer
from appliance.media.source_base import FrameSource, FrameTimeoutError
from appliance.modelstore import ModelStore
from appliance.pipeline.adaptive import AdaptiveController
from appliance.pipeline.factory import build_processor
from appliance.pipeline.ladder import LadderTiming
from appliance.pipeline.processor import FrameProcessor
from appliance.pipeline.quality import QualityLevel
from appliance.pipeline.runner import PipelineRunner
from appliance.pipeline.telemetry import Drop, Telemetry
from appliance.vision.swap_geometric import GeometricSwapper
from tests.waiting import wait_for

VGA = (640, 480)
PERIOD_NS = 33_333_333
QUICK = LadderTiming(
    window_s=0.3, degrade_after_s=0.3, recover_after_s=0.5, max_recover_s=4.0, probation_s=5.0
)


def empty_room(size: tuple[int, int] = VGA) -> Image:
    """A textured frame with nobody in it."""
    rng = np.random.default_rng(7)
    ramp = np.linspace(40, 200, size[0], dtype=np.float32)[None, :, None]
    noise = rng.normal(0, 12, (size[1], size[0], 3)).astype(np.float32)
    return np.clip(ramp + noise, 0, 255).astype(np.uint8)


def face_frames(astronaut: np.ndarray, count: int, size: tuple[int, int] = VGA) -> list[Image]:
    with DemoSource(astronaut, size=size, paced=False, frames=count) as demo:
        return [f.image for f in demo]


@pytest.fixture(scope="module")
def processor(store: ModelStore) -> FrameProcessor:
    return build_processor(Settings(), store, "grace_hopper")


class SceneSource(FrameSource):
    """A paced 'camera' that shows ``images`` in turn, then ends."""

    def __init__(self, images: list[Image], fps: float = 30.0) -> None:
        super().__init__(size=(images[0].shape[1], images[0].shape[0]), fps=fps)
        self.images = images
        self._pacer = Pacer(fps)

    def _on_start(self) -> None:
        self._pacer.reset()

    def _read(self, timeout_s: float | None) -> Frame | None:
        if self._next_index >= len(self.images):
            return None
        if not self._pacer.wait(timeout_s):
            raise FrameTimeoutError("next frame not due yet")
        self._pacer.mark()
        return self._make_frame(self.images[self._next_index].copy())


class SlowSwapper(GeometricSwapper):
    """The real swapper with a switchable delay: a stage made slow, then fast again."""

    delay_s = 0.0

    def swap(self, *args: Any, **kwargs: Any) -> bool:
        time.sleep(self.delay_s)
        return super().swap(*args, **kwargs)


@pytest.fixture
def reset(processor: FrameProcessor) -> Iterator[None]:
    processor.reset()
    yield
    processor.set_quality(QualityLevel("feather", 5))
    processor.reset()


@pytest.mark.usefixtures("reset")
def test_idle_clip_drops_to_the_idle_rate_and_wakes_within_two_frames(
    processor: FrameProcessor, astronaut: np.ndarray
) -> None:
    empty, faces = 60, 30  # 2 s with nobody, then 1 s with the demo face, at 30 fps
    images = [empty_room()] * empty + face_frames(astronaut, faces)
    telemetry = Telemetry()
    settings = PipelineSettings(idle_after_s=1.0, idle_fps=15.0)
    controller = AdaptiveController(processor, telemetry, settings)
    processed: dict[int, Frame] = {}
    for index, image in enumerate(images):
        frame = Frame(image=image.copy(), index=index, capture_ns=index * PERIOD_NS)
        if controller.refusal(frame) is None:
            processed[index] = processor.process(frame)
            controller.observe(frame, 10.0)
    went_idle = [i for i in processed if 30 < i < empty]
    assert went_idle and all(b - a == 2 for a, b in itertools.pairwise(went_idle))
    first_face = min(i for i, f in processed.items() if f.swapped)
    assert first_face <= empty + 1
    assert set(range(empty + 2, empty + faces)) <= set(processed)  # full rate again
    modes = [(t.to_state, t.reason) for t in telemetry.snapshot().transitions]
    assert [m for m, _ in modes] == ["idle", "normal"]
    assert "no face for 1 s" in modes[0][1]


@pytest.mark.usefixtures("reset")
def test_idle_in_the_running_pipeline(processor: FrameProcessor, astronaut: np.ndarray) -> None:
    images = [empty_room()] * 45 + face_frames(astronaut, 30)
    telemetry = Telemetry()
    settings = PipelineSettings(idle_after_s=0.5, idle_fps=15.0)
    controller = AdaptiveController(processor, telemetry, settings)
    sink = NullSink()
    runner = PipelineRunner(
        SceneSource(images), processor, [sink], telemetry, controller=controller
    )
    snap = runner.run_for(timeout_s=30.0)
    assert snap.drops.get("idle", 0) >= 5
    modes = [t.to_state for t in snap.transitions if t.subject == "mode"]
    assert modes == ["idle", "normal"]
    assert snap.mode == "normal"
    assert snap.errors == {}


@pytest.mark.usefixtures("reset")
def test_a_slow_stage_degrades_and_recovers_without_oscillating(
    store: ModelStore, astronaut: np.ndarray
) -> None:
    processor = build_processor(Settings(), store, "grace_hopper")
    swapper = SlowSwapper(processor.swapper.settings)
    processor.swapper = swapper
    telemetry = Telemetry()
    settings = PipelineSettings(target_fps=20.0, idle_after_s=60.0)
    controller = AdaptiveController(processor, telemetry, settings, timing=QUICK)
    source = DemoSource(astronaut, size=VGA, paced=True, fps=30.0)
    swapper.delay_s = 0.1  # the swap stage alone now takes longer than a frame at 20 fps
    with PipelineRunner(source, processor, [NullSink()], telemetry, controller=controller):
        assert wait_for(lambda: telemetry.snapshot().degrade_level == 1, 30.0)
        assert processor.redetect_every == 10
        swapper.delay_s = 0.0
        assert wait_for(lambda: telemetry.snapshot().degrade_level == 0, 30.0)
        time.sleep(1.5)  # several windows more at full speed: nothing else happens
        snap = telemetry.snapshot()
    steps = [(t.from_state, t.to_state) for t in snap.transitions if t.subject == "degrade"]
    assert steps == [("0", "1"), ("1", "0")]
    assert snap.quality == "full quality"
    assert processor.redetect_every == 5
    reasons = [t.reason for t in snap.transitions if t.subject == "degrade"]
    assert "under the 20.0 fps target" in reasons[0]
    assert "predicted" in reasons[1]


@pytest.mark.usefixtures("reset")
def test_processing_at_a_lower_height_keeps_the_frame_size(
    processor: FrameProcessor, astronaut: np.ndarray
) -> None:
    (image,) = face_frames(astronaut, 1, size=(1280, 720))
    processor.set_quality(QualityLevel("feather", 5, max_height=540))
    frame = processor.process(Frame(image=image.copy(), index=0, capture_ns=0))
    assert frame.swapped
    assert frame.image.shape == image.shape
    assert "resize" in frame.timings_ms
    changed = np.abs(frame.image.astype(int) - image.astype(int)).sum(axis=2) > 40
    assert changed.mean() > 0.01  # the face was swapped at the lower resolution
    assert processor.quality.max_height == 540


@pytest.mark.usefixtures("reset")
def test_the_light_landmarks_level_puts_every_face_on_the_light_models(
    processor: FrameProcessor, astronaut: np.ndarray
) -> None:
    """The demo's face (a 250 px crop at 1280x720) gets the attention model at full
    quality and the light landmarks at the ladder's light level, still swapped."""
    images = face_frames(astronaut, 4, size=(1280, 720))
    light = QualityLevel("feather", 10, light_landmarks=True, name="light landmarks")
    for level, expected in ((QualityLevel("feather", 5), False), (light, True)):
        processor.set_quality(level)
        processor.reset()
        for i, image in enumerate(images):
            frame = processor.process(Frame(image=image.copy(), index=i, capture_ns=i * PERIOD_NS))
            assert frame.swapped
        (track,) = processor.tracks
        assert track.raw.light is expected and processor.quality.light_landmarks is expected


@pytest.mark.usefixtures("reset")
def test_an_fps_cap_drops_frames_as_thermal_and_lifts(processor: FrameProcessor) -> None:
    telemetry = Telemetry()
    controller = AdaptiveController(processor, telemetry, PipelineSettings(idle_after_s=600.0))
    image = empty_room()
    frames = [Frame(image=image, index=i, capture_ns=i * PERIOD_NS) for i in range(60)]
    controller.set_fps_cap(15.0, "warm")
    refused = [controller.refusal(f) for f in frames[:30]]
    assert refused.count(Drop.THERMAL) == 15 and refused.count(None) == 15
    controller.set_fps_cap(None)
    assert all(controller.refusal(f) is None for f in frames[30:])
