"""A bad venue file on the HDMI screen: the first boot leaves its one line in /run, `mirror run`
shows it under the first-boot and camera screens."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from appliance.media.overlays import WARNING_RGB, FirstBootInfo, Overlays
from appliance.media.venue_problem import read_venue_problem, write_venue_problem
from appliance.modelstore import ModelStore

SIZE = (1280, 800)
PROBLEM = (
    "mirror.yaml on the boot partition: line 3: admin_port 70 must be a number from 1024 "
    "to 65535; defaults used"
)
INFO = FirstBootInfo("10.0.2.15", "http://10.0.2.15:8000/", "correct-horse-7")


@pytest.fixture
def font(store: ModelStore) -> Path:
    return store.path("label_font")


def _warning_ink(screen: np.ndarray) -> np.ndarray:
    """Where the screen (BGR) is within 24 levels of the warning colour: the problem's ink."""
    rgb = screen[..., ::-1].astype(np.int16)
    near: np.ndarray = np.all(np.abs(rgb - np.array(WARNING_RGB, dtype=np.int16)) <= 24, axis=-1)
    return near


def _band(mask: np.ndarray) -> tuple[int, int, int, int]:
    rows, cols = np.nonzero(mask)
    return int(rows.min()), int(rows.max()), int(cols.min()), int(cols.max())


@pytest.mark.parametrize("screen", ["first-boot", "camera"])
def test_the_problem_is_one_line_under_the_screen_text(font: Path, screen: str) -> None:
    with_problem = Overlays(font, problem=PROBLEM)
    without = Overlays(font)
    if screen == "first-boot":
        shown = with_problem.first_boot_screen(SIZE, INFO)
        plain = without.first_boot_screen(SIZE, INFO)
    else:
        shown = with_problem.camera_lost_screen(SIZE)
        plain = without.camera_lost_screen(SIZE)
    assert shown.shape == (SIZE[1], SIZE[0], 3)
    ink = _warning_ink(shown)
    assert not _warning_ink(plain).any()  # the colour is the problem's alone
    assert ink.sum() > 2000, ink.sum()
    top, bottom, left, right = _band(ink)
    # one line: about the problem's text height, under every other line, centred, on screen
    assert bottom - top < 0.06 * SIZE[1], (top, bottom)
    other = np.any(np.abs(shown.astype(np.int16) - shown[0, 0].astype(np.int16)) > 40, axis=-1)
    other &= ~ink
    other[top - 4 :] = False
    assert other.any() and np.nonzero(other)[0].max() < top
    assert abs((left + right) / 2 - SIZE[0] / 2) < 0.02 * SIZE[0]
    assert right - left > 0.6 * SIZE[0] and right - left <= 0.9 * SIZE[0]
    # the text drawn is this text: a shorter problem draws a narrower line in the same place
    short = Overlays(font, problem="mirror.yaml: line 3: bad")
    short_screen = (
        short.first_boot_screen(SIZE, INFO)
        if screen == "first-boot"
        else short.camera_lost_screen(SIZE)
    )
    s_top, _, s_left, s_right = _band(_warning_ink(short_screen))
    assert s_right - s_left < 0.5 * (right - left) and abs(s_top - top) <= 4


def test_the_problem_file_is_one_readable_line(tmp_path: Path) -> None:
    path = tmp_path / "run/mirror/venue-problem"
    assert read_venue_problem(path) is None
    write_venue_problem(path, PROBLEM)
    assert path.stat().st_mode & 0o777 == 0o644  # the mirror user reads it
    assert read_venue_problem(path) == PROBLEM
    path.write_text("first\x1b[2J line\nsecond line\n" + "x" * 500)
    assert read_venue_problem(path) == "first[2J line"
    path.write_text("y" * 500)
    line = read_venue_problem(path)
    assert line is not None and len(line) == 200
    write_venue_problem(path, None)
    assert not path.exists()


def _firstboot(root: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MIRROR_DATA_DIR": str(tmp_path / "data")}
    cmd = [sys.executable, "-m", "appliance.cli.main", "image", "firstboot", "--root", str(root)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)


def test_firstboot_leaves_the_problem_for_the_screen_and_clears_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/machine-id").write_text("0123456789abcdef0123456789abcdef\n")
    (root / "usr/share").mkdir(parents=True)
    (root / "usr/share/zoneinfo").symlink_to("/usr/share/zoneinfo")
    boot = root / "boot/firmware/mirror.yaml"
    boot.parent.mkdir(parents=True)
    boot.write_text("# the venue\nhostname: lobby\nadmin_port: 70\n")
    done = _firstboot(root, tmp_path)
    assert done.returncode == 0, done.stderr
    left = root / "run/mirror/venue-problem"
    expected = (
        "mirror.yaml on the boot partition: line 3: admin_port 70 must be a number from 1024 "
        "to 65535; defaults used"
    )
    assert left.read_text() == expected + "\n"
    assert expected in done.stderr  # the same line in the journal
    assert left.stat().st_mode & 0o777 == 0o644
    boot.write_text("hostname: lobby\nadmin_port: 8080\n")  # mended: the line goes
    done = _firstboot(root, tmp_path)
    assert done.returncode == 0, done.stderr
    assert not left.exists()


def _as_shot(rgb: np.ndarray, path: Path) -> Path:
    from PIL import Image

    Image.fromarray(rgb).save(path, format="PPM")
    return path


def test_the_boot_tests_screen_checks_tell_the_label_and_the_problem_apart(
    font: Path, tmp_path: Path, astronaut: np.ndarray
) -> None:
    """The boot test's checks of a screendump (tests/image_screens.py), on drawn screens."""
    import cv2

    from appliance.config import LabelSettings
    from appliance.media.letterbox import letterbox
    from appliance.vision.label import Labeler
    from tests.image_screens import check_label, check_problem_line, first_boot_expected

    size = (640, 480)
    frame = np.asarray(cv2.resize(astronaut, size), dtype=np.uint8)
    plain = letterbox(frame.copy(), (1280, 800))[..., ::-1]
    labelled = letterbox(Labeler(LabelSettings(), font).apply(frame), (1280, 800))[..., ::-1]
    check_label(_as_shot(np.ascontiguousarray(labelled), tmp_path / "l.ppm"), font, size)
    with pytest.raises(AssertionError):
        check_label(_as_shot(np.ascontiguousarray(plain), tmp_path / "p.ppm"), font, size)
    with_problem = first_boot_expected(font, size, INFO, PROBLEM)
    shot = _as_shot(np.ascontiguousarray(with_problem), tmp_path / "fb.ppm")
    check_problem_line(shot, font, size, INFO, PROBLEM)
    without = first_boot_expected(font, size, INFO, None)
    shot = _as_shot(np.ascontiguousarray(without), tmp_path / "fb0.ppm")
    with pytest.raises(AssertionError):
        check_problem_line(shot, font, size, INFO, PROBLEM)
    with pytest.raises(AssertionError):  # the first-boot screen is not the labelled mirror
        check_label(shot, font, size)
