"""The screen besides the mirror: the first-boot notice until the first login, the camera
screen while the camera is gone, and `mirror run --display auto` without a screen."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from appliance.media.display_screens import CameraLostScreen, FirstBootScreen, one_time_password
from appliance.media.frames import Frame
from appliance.media.overlays import Overlays
from appliance.modelstore import ModelStore
from tests.screen_fakes import Recorder
from tests.waiting import wait_for


@pytest.fixture
def overlays(store: ModelStore) -> Overlays:
    return Overlays(store.path("label_font"))


def test_the_first_boot_notice_shows_until_the_first_login(
    overlays: Overlays, tmp_path: Path
) -> None:
    notice = tmp_path / "first-boot.txt"
    notice.write_text("user: admin\npassword: Ab3d-Ef4h-Jk6m-Np7q\n", encoding="utf-8")
    assert one_time_password(notice) == "Ab3d-Ef4h-Jk6m-Np7q"
    screen = Recorder()
    sink = FirstBootScreen(screen, overlays, notice, 8000)
    mirror = np.full((480, 640, 3), 77, np.uint8)
    with sink:
        for index in range(5):
            sink.write(Frame(mirror.copy(), index, index))
        assert sink.reads == 1  # read once, not on every frame
        notice.write_text("user: admin\npassword: Zz9y-Xx8w-Vv7u-Tt6s-Ss5r\n", encoding="utf-8")
        sink.write(Frame(mirror.copy(), 5, 5))
        assert sink.reads == 2  # and again when it changed
        notice.unlink()  # the first password change removes it
        sink.write(Frame(mirror.copy(), 6, 6))
    first, *_, changed, after = screen.images
    assert first.shape == mirror.shape and not np.array_equal(first, mirror)
    assert not np.array_equal(changed, first)  # the new password is shown
    assert np.array_equal(after, mirror)
    assert one_time_password(notice) is None


def test_the_idle_screen_shows_while_nobody_is_there(overlays: Overlays, tmp_path: Path) -> None:
    screen = Recorder()
    sink = FirstBootScreen(screen, overlays, tmp_path / "no-notice.txt", 8000)
    room = np.full((240, 320, 3), 120, np.uint8)
    with sink:
        sink.write(Frame(room.copy(), 0, 0, idle=True))  # nobody: the idle screen
        visitor = Frame(room.copy(), 1, 1, idle=True)
        visitor.faces = 1
        sink.write(visitor)  # a face: the mirror at once, even before idle mode ends
        sink.write(Frame(room.copy(), 2, 2))
    idle, face, after = screen.images
    assert not np.array_equal(idle, room)
    assert np.array_equal(face, room) and np.array_equal(after, room)


def test_the_camera_screen_shows_while_the_camera_is_gone(overlays: Overlays) -> None:
    screen = Recorder()
    screen.start()
    lost = CameraLostScreen([screen], overlays, (320, 240))
    lost.update(camera_connected=False)
    assert wait_for(lambda: len(screen.images) >= 2, 5.0)
    lost.update(camera_connected=True)
    count = len(screen.images)
    time.sleep(0.7)
    assert len(screen.images) == count  # hidden: the mirror writes again, not the screen
    assert screen.images[0].shape == (240, 320, 3)
    lost.close()
    screen.close()


def test_run_with_display_auto_and_no_screen_runs_headless() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "appliance.cli.main", "run", "--frames", "10", "--no-preview",
         "--no-web", "--display", "auto", "--profile", "x86-cpu"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    if not Path("/dev/fb0").exists():
        assert "headless" in proc.stderr
    assert "10 frames captured" in proc.stdout
