"""`mirror run --as-camera`: a recorded clip plays the camera in front of the mirror.

A real subprocess on talking_man_greenscreen.mp4 (../shared/media; skipped
when absent): as a camera, liveness is on, so the frames before the man's
blink are shown unswapped and the summary line says how many were shown and
swapped; as a plain file, every frame with his face is swapped.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import shared_media

MIRROR = [sys.executable, "-m", "appliance.cli.main"]
QUIET = ("--status-every", "0")
SUMMARY = re.compile(r"(\d+) frames captured, (\d+) shown \((\d+) swapped\)")


def run(*extra: str) -> tuple[int, int, int, str]:
    clip = shared_media("talking_man_greenscreen.mp4")
    done = subprocess.run(
        [*MIRROR, "run", "--source", str(clip), "--no-web", "--no-preview", *QUIET, *extra],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    found = SUMMARY.search(done.stdout)
    assert found, done.stdout
    captured, shown, swapped = (int(g) for g in found.groups())
    return captured, shown, swapped, done.stderr


@pytest.mark.media
def test_a_clip_as_the_camera_is_swapped_only_after_the_blink() -> None:
    captured, shown, swapped, err = run("--as-camera", "--loop", "--frames", "200")
    assert "liveness on" in err and "--as-camera" in err
    assert captured == 200
    assert 0 < swapped < shown, "unswapped until the blink (2.56 s in each loop), then swapped"


@pytest.mark.media
def test_the_same_clip_as_a_file_is_swapped_at_once() -> None:
    _, shown, swapped, err = run()
    assert "liveness off" in err
    assert swapped == shown > 0
