"""`mirror swap-*` never loses a file: same input and output refused, full disk an error,
and images over the pixel limit refused from their header (the web upload's message)."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from appliance.modelstore import ModelStore
from appliance.vision.pixel_limit import bomb_message, too_many_pixels
from tests.image_bombs import write_blank_png
from tests.test_cli import MIRROR, assert_one_line_error, mirror, swap_image


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory, store: ModelStore) -> Path:
    """Twelve 512x512 frames of the astronaut, moving (about 60 kB as mp4v)."""
    path = tmp_path_factory.mktemp("clip") / "clip.mp4"
    visitor = cv2.imread(str(store.path("astronaut")))
    assert visitor is not None
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"mp4v"), 10, (512, 512))
    for shift in range(12):
        writer.write(np.roll(visitor, shift * 2, axis=1))
    writer.release()
    return path


def swap_video(source: Path, output: Path) -> subprocess.CompletedProcess[str]:
    return mirror("swap-video", "--identity", "grace_hopper", "--input", source, "--output", output)


def leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


# ---- same input and output -----------------------------------------------------------------


@pytest.mark.parametrize("through", ["same path", "symlink", "relative path"])
def test_swap_video_onto_its_own_input_is_refused_and_the_input_kept(
    clip: Path, tmp_path: Path, through: str
) -> None:
    source = tmp_path / "visit.mp4"
    source.write_bytes(clip.read_bytes())
    before = source.read_bytes()
    output = source
    cwd = None
    if through == "symlink":
        output = tmp_path / "link.mp4"
        output.symlink_to(source.name)
    elif through == "relative path":
        (tmp_path / "sub").mkdir()
        output, cwd = Path("..") / "visit.mp4", tmp_path / "sub"
    proc = subprocess.run(
        [
            *MIRROR,
            "swap-video",
            "--identity",
            "grace_hopper",
            "--input",
            source,
            "--output",
            output,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        check=False,
    )
    assert_one_line_error(proc, "it is the input", "choose another output file")
    assert proc.returncode == 1
    assert source.read_bytes() == before
    assert leftovers(tmp_path, {"visit.mp4", "link.mp4", "sub"}) == []


def test_run_recording_over_its_own_source_is_refused(clip: Path, tmp_path: Path) -> None:
    source = tmp_path / "visit.mp4"
    source.write_bytes(clip.read_bytes())
    before = source.read_bytes()
    proc = mirror(
        "run", "--source", source, "--output", source, "--no-web", "--no-preview",
        "--frames", "5",
    )  # fmt: skip
    assert_one_line_error(proc, "it is the input", "choose another output file")
    assert source.read_bytes() == before


def test_swap_image_onto_its_input_or_identity_is_refused(
    store: ModelStore, tmp_path: Path
) -> None:
    visitor = tmp_path / "visitor.png"
    visitor.write_bytes(store.path("astronaut").read_bytes())
    identity = tmp_path / "identity.jpg"
    identity.write_bytes(store.path("grace_hopper").read_bytes())
    link = tmp_path / "out.png"
    link.symlink_to(visitor)
    for output in (visitor, link):
        proc = swap_image(identity, visitor, output)
        assert_one_line_error(proc, "it is the input")
    proc = swap_image(identity, visitor, identity)
    assert_one_line_error(proc, "it is the input", "identity.jpg")
    assert visitor.read_bytes() == store.path("astronaut").read_bytes()
    assert identity.read_bytes() == store.path("grace_hopper").read_bytes()


# ---- a full disk ---------------------------------------------------------------------------


@contextlib.contextmanager
def tiny_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    folder.mkdir()
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:
        pytest.skip(f"cannot run mount for a small tmpfs: {exc}")
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs (root needed): {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def _file_size_limit(limit: int) -> Callable[[], None]:
    def apply() -> None:  # in the child: writes past ``limit`` fail with EFBIG
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def run_limited(args: list[str | Path], limit: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MIRROR, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_file_size_limit(limit),
        check=False,
    )


OLD = b"the previous recording, which must survive\n" * 5000  # 215 kB


@pytest.mark.parametrize("how", ["tmpfs", "RLIMIT_FSIZE"])
def test_a_full_disk_fails_swap_video_and_keeps_the_old_output(
    clip: Path, tmp_path: Path, how: str
) -> None:
    args: list[str | Path] = ["swap-video", "--identity", "grace_hopper", "--input", clip]
    with contextlib.ExitStack() as stack:
        if how == "tmpfs":  # 300 kB: the old file and about 85 kB, the new one needs about 80
            folder = stack.enter_context(tiny_tmpfs(tmp_path / "disk", "300k"))
            filler = folder / "filler"
            filler.write_bytes(b"\0" * 40_000)
            out = folder / "out.mp4"
            out.write_bytes(OLD)
            proc = mirror(*args, "--output", out)
        else:
            folder = tmp_path
            out = folder / "out.mp4"
            out.write_bytes(OLD)
            proc = run_limited([*args, "--output", out], limit=40_000)
        assert_one_line_error(proc, f"cannot write {out}", "is the disk full?")
        assert proc.returncode == 1
        assert "frames swapped" not in proc.stdout and "with a swapped face" not in proc.stdout
        assert out.read_bytes() == OLD
        assert leftovers(folder, {"out.mp4", "filler"}) == []


def test_a_full_disk_fails_swap_image_and_keeps_the_old_output(
    store: ModelStore, tmp_path: Path
) -> None:
    out = tmp_path / "out.png"
    out.write_bytes(OLD)
    proc = run_limited(
        [
            "swap-image",
            "--identity",
            "grace_hopper",
            "--input",
            store.path("astronaut"),
            "--output",
            out,
        ],
        limit=40_000,
    )
    assert_one_line_error(proc, f"cannot write {out}")
    assert proc.returncode == 1
    assert out.read_bytes() == OLD
    assert leftovers(tmp_path, {"out.png"}) == []


def test_swap_video_replaces_an_old_output_in_one_step(clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.mp4"
    out.write_bytes(OLD)
    proc = swap_video(clip, out)
    assert proc.returncode == 0, proc.stderr
    cap = cv2.VideoCapture(str(out))
    assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 12
    cap.release()
    assert leftovers(tmp_path, {"out.mp4"}) == []


# ---- pixel limits --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bombs")
    return {
        # past Pillow's own guard: 900 megapixels in about 110 kB
        "bomb": write_blank_png(folder / "bomb.png", 30000, 30000),
        # under Pillow's guard, over ours: 30 megapixels in 4 kB
        "big": write_blank_png(folder / "big.png", 6000, 5000),
    }


EXPECTED = {"bomb": bomb_message(), "big": too_many_pixels((6000, 5000))}


@pytest.mark.parametrize("kind", ["bomb", "big"])
@pytest.mark.parametrize("role", ["--input", "--identity"])
def test_images_over_the_pixel_limit_are_refused_from_the_header(
    bombs: dict[str, Path], store: ModelStore, tmp_path: Path, kind: str, role: str
) -> None:
    image = bombs[kind]
    paths = {"--input": store.path("astronaut"), "--identity": store.path("grace_hopper")}
    paths[role] = image
    out = tmp_path / "o.png"
    started = time.monotonic()  # the same command failing at once: the start-up cost
    swap_image(paths["--identity"], tmp_path / "missing.png", out)
    startup = time.monotonic() - started
    started = time.monotonic()
    proc = swap_image(paths["--identity"], paths["--input"], out)
    took = time.monotonic() - started
    assert_one_line_error(proc, f"{image}: {EXPECTED[kind]}")
    assert proc.returncode == 1
    assert took < startup + 2.0, (took, startup)  # decoding the bomb took 16 s and 5.4 GB
    assert not out.exists()


def test_run_refuses_an_identity_photo_over_the_pixel_limit(bombs: dict[str, Path]) -> None:
    proc = mirror("run", "--identity", bombs["big"], "--frames", "5", "--no-preview", "--no-web")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("mirror: error:")]
    assert errors == [f"mirror: error: {bombs['big']}: {EXPECTED['big']}"], proc.stderr


def test_the_web_upload_gives_the_same_message(bombs: dict[str, Path]) -> None:
    from appliance.control.uploads import check_upload
    from appliance.errors import UploadError

    for kind, path in bombs.items():
        with pytest.raises(UploadError) as caught:
            check_upload(path.read_bytes(), path.name, "image/png")
        assert str(caught.value) == EXPECTED[kind]
