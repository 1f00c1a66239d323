"""The A/B update on the HDMI screen: `mirror run --display auto` shows the installer's
progress (``<data dir>/updates/status.json``, written as the installer writes it) as one
small line in a corner, while the update is under way and for ten minutes after it failed
or ended; never over the visitor's face, the AI-generated label or the liveness prompt.

The screen is a faked framebuffer (``tests.screen_fakes``); the frames are the real
pipeline's (demo photo, real swap, real label).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import get_args

import cv2
import numpy as np
import pytest

from appliance.config import LabelPosition, LabelSettings, LivenessSettings
from appliance.media.overlays import Overlays, update_corner
from appliance.media.update_note import UpdateNote, update_line
from appliance.modelstore import ModelStore
from appliance.pipeline.liveness_stage import prompt_labeler
from appliance.updates.queue import UpdateStatus, write_status
from appliance.updates.recent import RECENT_S, booted_at
from appliance.vision.label import Labeler
from tests.screen_fakes import FILL, plug_fb
from tests.test_run_cmd import _data_dir, _start
from tests.waiting import wait_for

WIDTH, HEIGHT = 640, 480  # the demo source's size: the screen shows it 1:1
CORNER = (WIDTH * 3 // 10 + 1, HEIGHT // 10)  # the top-left box the line must stay in
INSTALLING = UpdateStatus("installing", "42% Copying image to rootfs.1", 42, "x.raucb", 0.0)


def _screen(device: Path) -> np.ndarray:
    data = device.read_bytes()
    if len(data) < WIDTH * HEIGHT * 4:
        return np.zeros((HEIGHT, WIDTH, 3), np.uint8)
    return np.frombuffer(data, np.uint8)[: WIDTH * HEIGHT * 4].reshape(HEIGHT, WIDTH, 4)[..., :3]


def _line_pixels(screen: np.ndarray) -> np.ndarray:
    """Where the screen has the update line's colour (overlays.ACCENT_RGB, BGR here)."""
    blue, green, red = (screen[..., i].astype(np.int16) for i in range(3))
    return (blue > 200) & (blue - red > 70) & (green > 150)


def _in_corner(device: Path) -> int:
    return int(_line_pixels(_screen(device))[: CORNER[1], : CORNER[0]].sum())


def _write(data: Path, status: UpdateStatus, at: float) -> None:
    write_status(data, UpdateStatus(status.state, status.message, status.percent, "", at))


def test_mirror_run_shows_the_update_in_a_corner_while_it_matters(
    store: ModelStore, tmp_path: Path
) -> None:
    data, root = tmp_path / "data", tmp_path / "root"
    data.mkdir()
    _data_dir(data, store)
    device, _ = plug_fb(root, "vc4drmfb", (WIDTH, HEIGHT))
    env = {**os.environ, "MIRROR_DATA_DIR": str(data), "MIRROR_DISPLAY_ROOT": str(root)}
    args = ["--display", "auto", "--profile", "x86-cpu", "--no-preview", "--no-web"]
    proc = _start([*args, "--status-every", "0"], env)
    try:
        assert wait_for(lambda: set(device.read_bytes()[: WIDTH * 4]) != {FILL}, 60.0)
        assert not _line_pixels(_screen(device)).any()  # nothing of the colour before

        _write(data, INSTALLING, time.time())  # the installer, under way
        assert wait_for(lambda: _in_corner(device) > 20, 30.0)
        screen = _screen(device)
        cv2.imwrite(str(tmp_path / "updating.png"), screen)  # to look at when it fails
        line = _line_pixels(screen)
        assert line.sum() == line[: CORNER[1], : CORNER[0]].sum()  # only in the corner

        _write(
            data, UpdateStatus("done", "version 1.5.0 installed", None), time.time() - RECENT_S - 5
        )
        assert wait_for(lambda: _in_corner(device) == 0, 30.0)  # ended over ten minutes ago

        _write(data, UpdateStatus("failed", "bundle signature invalid", None), time.time())
        assert wait_for(lambda: _in_corner(device) > 20, 30.0)  # failed just now

        # the last thing an install says, and the device restarted since: over
        _write(data, UpdateStatus("rebooting", "rebooting into B", 100), booted_at() - 60)
        assert wait_for(lambda: _in_corner(device) == 0, 30.0)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err


@pytest.mark.parametrize("position", get_args(LabelPosition))
def test_the_line_keeps_clear_of_the_face_the_label_and_the_prompt(
    store: ModelStore, astronaut: np.ndarray, face: np.ndarray, position: LabelPosition
) -> None:
    font = store.path("label_font")
    label = Labeler(LabelSettings(position=position), font)
    prompt = prompt_labeler(LivenessSettings(), label)
    assert prompt is not None
    overlays = Overlays(font)
    overlays.update_corner = update_corner(position)
    overlays.update_note = update_line(INSTALLING, overlays.texts)
    assert overlays.update_note == "Updating: installing 42% — do not unplug"
    photo_h, photo_w = astronaut.shape[:2]
    for width, height in ((640, 480), (1280, 720), (1920, 1080)):
        frame = np.asarray(cv2.resize(astronaut, (width, height)), dtype=np.uint8)
        shown = frame.copy()
        label.apply(shown)  # two visitors: one swapped (the label), one not yet (the prompt)
        prompt.apply(shown)
        taken = (shown != frame).any(axis=2)
        x = face[:, 0] * width / photo_w
        y = face[:, 1] * height / photo_h
        taken[int(y.min()) : int(y.max()) + 1, int(x.min()) : int(x.max()) + 1] = True
        noted = shown.copy()
        assert overlays.draw_update_note(noted)
        line = (noted != shown).any(axis=2)
        assert line.sum() > 0.002 * width * height, (width, height)  # drawn, not a speck
        assert not (line & taken).any(), (position, width, height)


def test_the_status_file_is_looked_at_once_a_second_and_read_when_it_changed(
    tmp_path: Path, store: ModelStore
) -> None:
    now = [100.0]
    note = UpdateNote(tmp_path, clock=lambda: now[0])
    texts = Overlays(store.path("label_font")).texts
    assert note.line(texts) == "" and note.reads == 0  # no file: nothing to say
    _write(tmp_path, INSTALLING, time.time())
    assert note.line(texts) == ""  # looked at less than a second ago
    now[0] += 1.0
    assert note.line(texts) == "Updating: installing 42% — do not unplug"
    for _ in range(50):  # every tick and frame asks; the file is read once
        now[0] += 0.1
        note.line(texts)
    assert note.reads == 1
    _write(tmp_path, UpdateStatus("failed", "no space left on rootfs.1 " * 4, None), time.time())
    now[0] += 1.0
    failed = note.line(texts)
    assert failed.startswith("Update failed: no space left on rootfs.1") and failed.endswith("…")
    assert note.reads == 2
