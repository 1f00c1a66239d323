"""The `mirror` command on real files, and every bad input as a one-line error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from appliance.cli.main import main
from appliance.media.stills import read_ai_metadata
from appliance.modelstore import ModelStore

MIRROR = [sys.executable, "-m", "appliance.cli.main"]


def mirror(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MIRROR, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def swap_image(
    identity: str | Path, source: str | Path, output: str | Path, *extra: str | Path, **kw: Any
) -> subprocess.CompletedProcess[str]:
    return mirror(
        "swap-image", "--identity", identity, "--input", source, "--output", output, *extra, **kw
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("mirror:")]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture(scope="module")
def photos(store: ModelStore) -> dict[str, Path]:
    return {"identity": store.path("grace_hopper"), "visitor": store.path("astronaut")}


def test_swap_image_writes_labelled_still_with_metadata(
    photos: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out.png"
    proc = swap_image(photos["identity"], photos["visitor"], out)
    assert proc.returncode == 0, proc.stderr
    image = cv2.imread(str(out))
    assert image.shape == cv2.imread(str(photos["visitor"])).shape
    assert read_ai_metadata(out).get("ai_generated") == "true"


def test_swap_video_with_progress(photos: dict[str, Path], tmp_path: Path) -> None:
    clip = tmp_path / "clip.mp4"
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter_fourcc(*"mp4v"), 10, (512, 512))
    visitor = cv2.imread(str(photos["visitor"]))
    for shift in range(12):
        writer.write(np.roll(visitor, shift * 2, axis=1))
    writer.release()
    out = tmp_path / "swapped.mp4"
    proc = mirror("swap-video", "--identity", "grace_hopper", "--input", clip, "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert "12/12 frames" in proc.stderr
    assert "12 with a swapped face" in proc.stdout
    cap = cv2.VideoCapture(str(out))
    assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 12
    cap.release()


def test_run_demo_for_some_frames_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "run.mp4"
    proc = mirror("run", "--frames", "20", "--no-preview", "--no-web", "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert "20 frames captured" in proc.stdout
    assert "ended: frame limit 20 reached" in proc.stdout
    shown = int(proc.stdout.split(" shown")[0].rsplit(" ", 1)[1])
    swapped = int(proc.stdout.split(" swapped)")[0].rsplit("(", 1)[1])
    assert 10 <= shown <= 20 and swapped >= shown - 3  # the first frames may still be detecting
    cap = cv2.VideoCapture(str(out))
    assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == shown
    cap.release()


def test_models_fetch_twice_downloads_nothing() -> None:
    proc = mirror("models", "fetch")
    assert proc.returncode == 0, proc.stderr
    assert "0 package(s) downloaded" in proc.stdout


@pytest.fixture
def bad_files(tmp_path: Path) -> dict[str, Path]:
    text = tmp_path / "notes.jpg"
    text.write_text("this is not an image\n")
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    truncated = tmp_path / "truncated.jpg"
    _ok, jpeg = cv2.imencode(".jpg", np.full((64, 64, 3), 100, np.uint8))
    truncated.write_bytes(jpeg.tobytes()[:40])
    noface = tmp_path / "wall.png"
    cv2.imwrite(str(noface), np.full((200, 200, 3), 180, np.uint8))
    video = tmp_path / "broken.mp4"
    video.write_bytes(os.urandom(4096))
    return {"text": text, "empty": empty, "truncated": truncated, "noface": noface, "video": video}


@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        ("text", "not a readable image"),
        ("empty", "empty file"),
        ("truncated", "not a readable image"),
    ],
)
def test_bad_input_image(
    bad_files: dict[str, Path], photos: dict[str, Path], tmp_path: Path, kind: str, needle: str
) -> None:
    out = tmp_path / "o.png"
    proc = swap_image(photos["identity"], bad_files[kind], out)
    assert_one_line_error(proc, str(bad_files[kind]), needle)
    assert not out.exists()


def test_missing_input(photos: dict[str, Path], tmp_path: Path) -> None:
    proc = swap_image(photos["identity"], tmp_path / "nope.jpg", tmp_path / "o.png")
    assert_one_line_error(proc, "nope.jpg", "no such file")


def test_identity_without_face(
    bad_files: dict[str, Path], photos: dict[str, Path], tmp_path: Path
) -> None:
    proc = swap_image(bad_files["noface"], photos["visitor"], tmp_path / "o.png")
    assert_one_line_error(proc, "wall.png", "no face")


def test_input_without_face(
    bad_files: dict[str, Path], photos: dict[str, Path], tmp_path: Path
) -> None:
    proc = swap_image(photos["identity"], bad_files["noface"], tmp_path / "o.png")
    assert_one_line_error(proc, "no face")


def test_video_that_cannot_be_opened(bad_files: dict[str, Path], tmp_path: Path) -> None:
    proc = mirror(
        "swap-video",
        "--identity",
        "grace_hopper",
        "--input",
        bad_files["video"],
        "--output",
        tmp_path / "o.mp4",
    )
    assert_one_line_error(proc, "broken.mp4")


@pytest.mark.parametrize("command", ["swap-image", "swap-video"])
def test_output_not_writable(photos: dict[str, Path], tmp_path: Path, command: str) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    source = photos["visitor"]
    if command == "swap-video":
        source = tmp_path / "clip.mp4"
        writer = cv2.VideoWriter(str(source), cv2.VideoWriter_fourcc(*"mp4v"), 10, (64, 64))
        writer.write(np.zeros((64, 64, 3), np.uint8))
        writer.release()
    suffix = ".png" if command == "swap-image" else ".mp4"
    proc = mirror(
        command,
        "--identity",
        photos["identity"],
        "--input",
        source,
        "--output",
        blocker / f"out{suffix}",
    )
    assert_one_line_error(proc, "cannot write")


def test_corrupt_model_is_a_clear_error(
    store: ModelStore, tmp_path: Path, photos: dict[str, Path]
) -> None:
    cache = tmp_path / "data" / "models"
    cache.mkdir(parents=True)
    for entry in store.manifest.entries().values():
        (cache / entry.file).symlink_to(store.cache_dir / entry.file)
    target = cache / "face_detector.tflite"
    target.unlink()
    target.write_bytes(b"\0" * 1024)
    proc = swap_image(
        photos["identity"],
        photos["visitor"],
        tmp_path / "o.png",
        env={"MIRROR_DATA_DIR": str(tmp_path / "data")},
    )
    assert_one_line_error(proc, "face_detector.tflite", "expected", "mirror models fetch")
    verify = mirror("models", "verify", env={"MIRROR_DATA_DIR": str(tmp_path / "data")})
    assert verify.returncode != 0 and "missing" in verify.stdout


def test_bad_config_value(tmp_path: Path, photos: dict[str, Path]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("label:\n  size_fraction: 0.01\n")
    proc = swap_image(photos["identity"], photos["visitor"], tmp_path / "o.png", "--config", config)
    assert_one_line_error(proc, "label.size_fraction", "0.01")


def test_run_serves_the_labelled_preview(tmp_path: Path) -> None:
    """`mirror run` prints the preview URL and serves labelled JPEG frames there."""
    import urllib.request

    proc = subprocess.Popen(
        [*MIRROR, "run", "--port", "0", "--frames", "150", "--no-web"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "preview at http://127.0.0.1:" in line, line
        url = line.split("preview at ")[1].split()[0]
        image = None
        for _ in range(100):
            try:
                with urllib.request.urlopen(url + "frame.jpg", timeout=5) as response:
                    data = response.read()
                image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
                break
            except OSError:
                import time

                time.sleep(0.1)
        assert image is not None and image.shape == (480, 640, 3)
        with urllib.request.urlopen(url, timeout=5) as response:
            assert "stream.mjpg" in response.read().decode()
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == 0


def test_the_mirror_hands_pythons_lock_over_every_millisecond(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The process thread holds the GIL between many small calls; a waiting thread (the
    capture, a face, a helper's reply) gets it after 1 ms, not Python's default 5."""
    asked: list[float] = []
    monkeypatch.setattr(sys, "setswitchinterval", asked.append)
    with pytest.raises(SystemExit):
        main(["--help"])
    assert asked == [0.001]


# ---- numbers and names the system cannot take ---------------------------------------------

LONG_NAME = "a" * 300  # longer than any file system's 255 bytes


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("--fps", "1e308", "--fps must be above 0 and at most 240"),
        ("--fps", "inf", "--fps must be above 0"),
        ("--fps", "nan", "--fps must be above 0"),
        ("--fps", "0", "--fps must be above 0"),
        ("--fps", "241", "at most 240"),
        ("--status-every", "nan", "--status-every must be a number of seconds"),
        ("--status-every", "inf", "--status-every must be a number of seconds"),
        ("--size", "99999x99999", "at most 25 megapixels"),
        ("--port", "70000", "--port must be 0..65535"),
    ],
)
def test_run_refuses_numbers_it_cannot_run_with(option: str, value: str, needle: str) -> None:
    """One error line before any model loads, never a run that ignores --frames."""
    proc = mirror("run", option, value, "--frames", "5", "--no-web", "--no-preview", timeout=600)
    assert proc.returncode == 1
    assert_one_line_error(proc, "mirror: error:", needle)


def test_an_output_name_too_long_is_one_error_line(photos: dict[str, Path], tmp_path: Path) -> None:
    clip = tmp_path / "clip.mp4"
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter_fourcc(*"mp4v"), 10, (64, 64))
    writer.write(np.zeros((64, 64, 3), np.uint8))
    writer.release()
    visitor = photos["visitor"]
    commands: list[tuple[str | Path, ...]] = [
        ("run", "--frames", "5", "--no-web", "--no-preview", "--output", f"{LONG_NAME}.mp4"),
        ("swap-image", "--identity", "grace_hopper", "--input", visitor, "--output",
         f"{LONG_NAME}.png"),
        ("swap-video", "--identity", "grace_hopper", "--input", clip, "--output",
         f"{LONG_NAME}.mp4"),
        ("identity", "check", visitor, "--preview", f"{LONG_NAME}.jpg"),
    ]  # fmt: skip
    for args in commands:
        proc = subprocess.run(
            [*MIRROR, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
            check=False,
        )
        assert proc.returncode == 1, (args[0], proc.stderr)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("mirror: error:")]
        assert len(errors) == 1 and "Traceback" not in proc.stderr, (args[0], proc.stderr)
        assert "File name too long" in errors[0], errors[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4"]
