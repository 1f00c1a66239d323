"""`mirror run --output` keeps its recording through `kill -9` and a full disk; the hidden
files an interrupted writer leaves are recovered or removed at the next start."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from appliance.media.video_join import join_videos
from appliance.media.work_locks import hold, release
from appliance.modelstore import ModelStore
from tests.test_cli import MIRROR, mirror
from tests.test_cli_outputs import tiny_tmpfs
from tests.waiting import wait_for

RUN = ["run", "--source", "demo", "--no-web", "--no-preview", "--status-every", "0"]


def frames_in(path: Path) -> int:
    """Frames that decode from ``path`` with OpenCV, as a player would read them."""
    cap = cv2.VideoCapture(str(path))
    count = 0
    while cap.read()[0]:
        count += 1
    cap.release()
    return count


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("mirror: error:")]


def test_kill_9_keeps_the_recording_up_to_its_last_seconds(tmp_path: Path) -> None:
    out = tmp_path / "rec.mp4"
    proc = subprocess.Popen(
        [*MIRROR, *RUN, "--size", "320x240", "--output", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def closed_segments() -> list[Path]:  # all but the one being written
            segments = sorted(tmp_path.glob(".rec.mp4.parts-*/*.mp4"))
            return segments[:-1]

        assert wait_for(lambda: len(closed_segments()) >= 2 or proc.poll() is not None, 300), (
            "no recording segments were written"
        )
        assert proc.poll() is None, proc.communicate()[1]
        segments = closed_segments()
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert not out.exists()
    recorded = sum(frames_in(segment) for segment in segments)
    assert recorded > 0, "the closed segments of the killed recording do not play"

    again = mirror(*RUN, "--frames", "10", "--output", out)
    assert again.returncode == 0, again.stderr
    assert "an earlier recording was interrupted" in again.stderr, again.stderr
    recovered = sorted(tmp_path.glob("rec.recovered-*.mp4"))
    assert len(recovered) == 1, sorted(p.name for p in tmp_path.iterdir())
    assert frames_in(recovered[0]) >= recorded  # the segments closed before the kill, at least
    assert frames_in(out) > 0  # the new recording too
    assert hidden(tmp_path) == []  # nothing left behind


def test_a_full_disk_fails_the_run_and_keeps_what_was_recorded(tmp_path: Path) -> None:
    with tiny_tmpfs(tmp_path / "disk", "200k") as disk:
        out = disk / "rec.mp4"
        args = [*RUN, "--size", "320x240", "--fps", "10", "--frames", "300", "--output", out]
        proc = mirror(*args, timeout=600)
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
        lines = error_lines(proc.stderr)
        assert len(lines) == 1, proc.stderr
        assert f"cannot write {out}" in lines[0] and "disk full" in lines[0], lines[0]
        assert "frames recorded are kept in" in lines[0], lines[0]
        kept = Path(lines[0].rsplit(" kept in ", 1)[1].split(" ")[0].rstrip(";"))
        if kept.is_dir():  # not even room to join them: the segments wait for the next start
            assert frames_in(sorted(kept.glob("*.mp4"))[0]) > 0
            assert hidden(disk) == [kept.name]
        else:
            assert kept.name.startswith("rec.recovered-") and frames_in(kept) > 0
            assert hidden(disk) == []
        assert not out.exists()


def test_an_abandoned_temporary_video_is_removed_and_a_held_one_kept(
    tmp_path: Path, store: ModelStore
) -> None:
    clip = tmp_path / "clip.mp4"
    visitor = cv2.imread(str(store.path("astronaut")))
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter.fourcc(*"mp4v"), 10, (256, 256))
    for shift in range(4):
        writer.write(np.roll(cv2.resize(visitor, (256, 256)), shift * 2, axis=1))
    writer.release()
    abandoned = tmp_path / ".out.k3j9x_2a.mp4"  # what a killed swap-video leaves
    abandoned.write_bytes(b"\0" * 1000)
    in_use = tmp_path / ".out.busy0000.mp4"  # another writer's, still working
    in_use.write_bytes(b"\0" * 1000)
    lock = hold(in_use)
    try:
        proc = mirror(
            "swap-video", "--identity", "grace_hopper", "--input", clip, "--output",
            tmp_path / "out.mp4",
        )  # fmt: skip
    finally:
        release(lock)
    assert proc.returncode == 0, proc.stderr
    assert not abandoned.exists()
    assert in_use.exists()
    assert frames_in(tmp_path / "out.mp4") == 4


@pytest.mark.parametrize("remux", [True, False], ids=["remux", "re-encode"])
def test_segments_join_into_one_video_in_order(tmp_path: Path, remux: bool) -> None:
    """The join keeps every frame in order, copying them (OpenCV 4.9+) or re-encoding."""
    parts = []
    for index, count in enumerate((7, 5)):
        part = tmp_path / f"{index:06d}.mp4"
        writer = cv2.VideoWriter(str(part), cv2.VideoWriter.fourcc(*"mp4v"), 10, (96, 64))
        for frame in range(count):
            image = np.full((64, 96, 3), 20 * (index * 7 + frame), np.uint8)
            writer.write(image)
        writer.release()
        parts.append(part)
    joined = tmp_path / "joined.mp4"
    assert join_videos(parts, joined, 10.0, remux=remux) == 12
    cap = cv2.VideoCapture(str(joined))
    levels = []
    while True:
        ok, image = cap.read()
        if not ok:
            break
        levels.append(int(image[32, 48, 1]))
    cap.release()
    assert len(levels) == 12
    assert all(abs(level - 20 * i) <= 8 for i, level in enumerate(levels)), levels
    assert os.path.getsize(joined) > 0
