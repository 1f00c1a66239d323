"""`mirror eval`: the figures on synthetic arrays, the recogniser's hash check, and
the command on a short real clip writing every figure and a contact sheet."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from appliance.errors import MissingExtraError, ModelHashError
from appliance.eval import metrics, recogniser
from appliance.eval.contact_sheet import SampleKeeper
from appliance.eval.regions import band_px, face_mask
from appliance.eval.report import EXPRESSION_BLENDSHAPES
from appliance.media.demo_source import DemoSource
from appliance.media.stills import read_ai_metadata
from appliance.modelstore import ModelStore

MIRROR = [sys.executable, "-m", "appliance.cli.main"]
HAS_EXTRA = all(importlib.util.find_spec(m) for m in ("dlib", "face_recognition_models"))
needs_extra = pytest.mark.skipif(
    not HAS_EXTRA, reason="the eval extra (dlib) is not installed: pip install '.[eval]'"
)
FIGURES = (
    "d_src",
    "d_orig",
    "moved",
    "d_src_unswapped",
    "stability",
    "seam",
    "seam_original",
)


def mirror(*args: str | Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MIRROR, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
        check=False,
    )


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("mirror:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


# --- the figures on synthetic data ---------------------------------------------------------


def _noise_frames(count: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (64, 64, 3), dtype=np.uint8) for _ in range(count)]


def test_stability_of_identical_sequences_is_one() -> None:
    frames = _noise_frames(5)
    mask = np.zeros((64, 64), np.uint8)
    mask[16:48, 16:48] = 255
    changes = [metrics.region_change(a, b, mask) for a, b in itertools.pairwise(frames)]
    values = [c for c in changes if c is not None]
    assert len(values) == 4 and min(values) > 0
    assert metrics.stability_ratio(values, values) == pytest.approx(1.0)


def test_stability_of_a_flickering_swap_is_above_one() -> None:
    still = _noise_frames(1)[0] // 2  # no uint8 wrap-around below
    mask = np.full((64, 64), 255, np.uint8)
    original = [metrics.region_change(still, still + 1, mask) or 0.0] * 3
    flicker = [metrics.region_change(still, still + 9, mask) or 0.0] * 3
    assert metrics.stability_ratio(flicker, original) == pytest.approx(9.0)
    assert metrics.stability_ratio([0.0], [0.0]) is None
    assert metrics.region_change(still, still, np.zeros((64, 64), np.uint8)) is None


def test_correlation_of_identical_blendshapes_is_one() -> None:
    series = [0.1, 0.5, 0.2, 0.9, 0.4]
    assert metrics.correlation(series, series) == pytest.approx(1.0)
    assert metrics.correlation(series, [1 - v for v in series]) == pytest.approx(-1.0)
    assert metrics.correlation(series, [0.3] * 5) == 0.0  # the swap followed nothing
    assert metrics.correlation([0.3] * 5, series) is None  # nothing to follow: undefined
    small = [0.30, 0.31, 0.30, 0.32, 0.31]  # below the expression threshold: noise
    assert metrics.correlation(small, series, min_variation=0.05) is None
    assert metrics.correlation([0.1, 0.2], [0.1, 0.2]) is None  # too few frames


def test_moved_share_and_distance() -> None:
    assert metrics.moved_share([0.4, 0.7, 0.5], [0.6, 0.6, 0.6]) == pytest.approx(2 / 3)
    assert metrics.moved_share([], []) is None
    assert metrics.distance(np.zeros(128), np.full(128, 0.5)) == pytest.approx(np.sqrt(32))


def _pasted(alpha: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(1)
    texture = cv2.GaussianBlur(rng.normal(0, 12, (200, 200)).astype(np.float32), (0, 0), 2)
    background, face = 90 + texture, 170 + texture[::-1]
    image = face * alpha + background * (1 - alpha)
    return np.clip(image, 0, 255).astype(np.uint8)


def test_seam_energy_higher_for_hard_paste_than_feathered() -> None:
    mask = np.zeros((200, 200), np.uint8)
    cv2.circle(mask, (100, 100), 60, 255, -1)
    hard = mask.astype(np.float32) / 255
    inner = cv2.erode(mask, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (25, 25)))
    soft = cv2.GaussianBlur(inner.astype(np.float32) / 255, (0, 0), 5)
    seam_hard = metrics.seam_energy(_pasted(hard), mask, band_px=3)
    seam_soft = metrics.seam_energy(_pasted(soft), mask, band_px=3)
    assert seam_hard is not None and seam_soft is not None
    assert seam_hard > 3 * seam_soft
    assert seam_soft < 2.0
    assert metrics.seam_energy(_pasted(hard), np.zeros_like(mask), 3) is None


def test_face_region_from_landmarks() -> None:
    points = np.zeros((478, 3), np.float32)
    angles = np.linspace(0, 2 * np.pi, 478)
    points[:, 0] = 50 + 20 * np.cos(angles)
    points[:, 1] = 50 + 30 * np.sin(angles)
    mask = face_mask((100, 100, 3), points)
    assert mask[50, 50] == 255 and mask[2, 2] == 0
    assert band_px(points) >= 2


def test_sample_keeper_stays_bounded_and_spread() -> None:
    keeper = SampleKeeper(count=6)
    image = np.zeros((48, 64, 3), np.uint8)
    for index in range(500):
        keeper.offer(index, image, image)
    assert len(keeper.samples) < 4 * 6
    chosen = [s.index for s in keeper.chosen()]
    assert len(chosen) == 6 and chosen[0] == 0 and chosen[-1] > 400
    assert chosen[0].__class__ is int and chosen == sorted(chosen)


# --- the recogniser -----------------------------------------------------------------------


def test_missing_extra_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingExtraError, match=r"pip install '\.\[eval\]'") as info:
        recogniser.installed_files()
    assert "\n" not in str(info.value)
    monkeypatch.setitem(sys.modules, "dlib", None)  # import dlib now fails
    with pytest.raises(MissingExtraError, match=r"pip install '\.\[eval\]'"):
        recogniser._import_dlib()


@pytest.fixture(scope="module")
def tampered_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = recogniser.installed_files()
    folder = tmp_path_factory.mktemp("tampered")
    shutil.copy(files.shape_predictor, folder / recogniser.SHAPE_PREDICTOR)
    shutil.copy(files.descriptor, folder / recogniser.DESCRIPTOR_MODEL)
    with open(folder / recogniser.DESCRIPTOR_MODEL, "r+b") as handle:
        handle.seek(1000)
        byte = handle.read(1)
        handle.seek(1000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    return folder


@needs_extra
def test_tampered_model_is_refused_before_loading(
    tampered_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*_: object) -> None:
        raise AssertionError("dlib must not be imported for a tampered file")

    monkeypatch.setattr(recogniser, "_import_dlib", never)
    with pytest.raises(ModelHashError, match="differs from the pinned") as info:
        recogniser.FaceRecogniser(recogniser.RecogniserFiles.in_dir(tampered_dir))
    assert "\n" not in str(info.value)
    assert recogniser.DESCRIPTOR_MODEL in str(info.value)


@needs_extra
def test_cli_refuses_tampered_model_in_one_line(tampered_dir: Path, tmp_path: Path) -> None:
    clip = tmp_path / "missing.mp4"
    proc = mirror("eval", "--identity", "grace_hopper", "--input", clip)
    assert "missing.mp4" in one_error_line(proc)  # inputs are checked first
    frames = tmp_path / "frames"
    frames.mkdir()
    cv2.imwrite(str(frames / "0.png"), np.zeros((32, 32, 3), np.uint8))
    proc = mirror(
        "eval", "--identity", "grace_hopper", "--input", frames, "--recogniser-dir", tampered_dir
    )
    line = one_error_line(proc)
    assert "sha256" in line and "not loaded" in line


# --- the command on a short real clip ------------------------------------------------------


@pytest.fixture(scope="module")
def demo_clip(store: ModelStore, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """24 frames of the astronaut photo with the demo source's slow pan and tilt."""
    path = tmp_path_factory.mktemp("clip") / "astronaut_demo.mp4"
    image = cv2.imread(str(store.path("astronaut")))
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 24, (640, 480))
    with DemoSource(image, size=(640, 480), paced=False, frames=24) as source:
        for frame in source:
            writer.write(frame.image)
    writer.release()
    return path


@needs_extra
def test_eval_writes_every_figure_and_a_contact_sheet(demo_clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    proc = mirror("eval", "--identity", "grace_hopper", "--input", demo_clip, "--output-dir", out)
    assert proc.returncode == 0, proc.stderr
    assert "24/24 frames" in proc.stderr  # progress, like swap-video
    report = json.loads((out / "astronaut_demo__grace_hopper.json").read_text())
    for name in FIGURES:
        assert isinstance(report[name], float), (name, report[name])
    assert 0.0 <= report["moved"] <= 1.0
    assert report["d_src"] < report["d_src_unswapped"]  # the swap moved towards the identity
    assert set(report["expression"]) == set(EXPRESSION_BLENDSHAPES)
    # the demo photo makes no expression: correlations are undefined, differences are not
    assert "expression_mean" in report
    assert all(isinstance(v, float) for v in report["expression_mae"].values())
    # the fill step (the midline: the demo photo fills nothing) and the worst amplitude
    assert isinstance(report["fill_step"], float) and isinstance(report["amplitude"], float)
    assert report["amplitude_blendshape"] in EXPRESSION_BLENDSHAPES
    assert all("fill_step" in frame for frame in report["per_frame"])
    assert report["frames"] == report["frames_with_face"] == 24
    assert report["recogniser_frames"] == 8  # every 3rd frame
    assert len(report["per_frame"]) == 24
    sheet_path = out / "astronaut_demo__grace_hopper.png"
    sheet = cv2.imread(str(sheet_path))
    assert sheet is not None and sheet.shape[0] > 480 and sheet.shape[1] > 900
    assert read_ai_metadata(sheet_path).get("ai_generated") == "true"
    assert "astronaut_demo__grace_hopper: identity  d_src" in proc.stdout
    table = proc.stdout.splitlines()[-1].split()
    assert table[:2] == ["astronaut_demo.mp4", "grace_hopper.jpg"] and table[-1] == "24/24"


@needs_extra
def test_eval_matrix_counts_frames_without_a_face(
    demo_clip: Path, store: ModelStore, tmp_path: Path
) -> None:
    frames = tmp_path / "stills"
    frames.mkdir()
    cv2.imwrite(str(frames / "a.png"), cv2.imread(str(store.path("astronaut"))))
    cv2.imwrite(str(frames / "b.png"), np.full((300, 300, 3), 127, np.uint8))  # no face
    out = tmp_path / "reports"
    identities = ("grace_hopper", str(store.path("astronaut")))
    proc = mirror(
        "eval",
        *("--identity", identities[0], "--identity", identities[1]),
        *("--input", demo_clip, "--input", frames),
        *("--output-dir", out, "--max-frames", "4", "--every", "2"),
    )
    assert proc.returncode == 0, proc.stderr
    assert len(list(out.glob("*.json"))) == len(list(out.glob("*.png"))) == 4
    stills = json.loads((out / "stills__grace_hopper.json").read_text())
    assert stills["frames"] == 2 and stills["frames_with_face"] == 1
    assert stills["per_frame"][1]["face"] is False
    table_rows = ("astronaut_demo.mp4 ", "stills ")
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith(table_rows)]
    assert len(rows) == 4


@needs_extra
def test_shape_transfer_moves_the_identity_on_a_shared_video(store: ModelStore) -> None:
    """Einstein on the talking man: the recogniser sees Einstein, and more so with the
    identity's proportions than with the visitor's own face shape."""
    from appliance.config import Settings, updated
    from appliance.eval.clips import open_clip
    from appliance.eval.evaluate import Models, evaluate
    from tests.conftest import shared_media

    video = shared_media("talking_man_greenscreen.mp4")
    photo = str(shared_media("portrait_einstein_bw.jpg"))
    settings = Settings()
    models = Models.load(settings, store)
    clip = open_clip(video)
    shaped = evaluate(photo, clip, settings, store, models=models, every=4, max_frames=40).report
    flat_settings = updated(settings, {"swap": {"shape_transfer": 0.0}})
    flat = evaluate(photo, clip, flat_settings, store, models=models, every=4, max_frames=40)
    assert shaped.moved is not None and shaped.moved >= 0.8
    assert shaped.d_src is not None and flat.report.d_src is not None
    assert shaped.d_src < flat.report.d_src  # the identity's shape moves it further
    assert shaped.d_src_unswapped is not None and shaped.d_src < shaped.d_src_unswapped - 0.2


def test_label_letters_are_not_counted_as_face_detail(store: ModelStore) -> None:
    """expressive_woman.mp4: the chin reaches the frame's bottom, under the AI label;
    the label's letters are left out of the detail and shading figures (with them
    the detail ratio read about 24)."""
    from appliance.config import Settings
    from appliance.eval import artefacts
    from appliance.eval.clips import open_clip
    from appliance.eval.evaluate import Models, evaluate
    from tests.conftest import shared_media

    clip = open_clip(shared_media("expressive_woman.mp4"))
    photo = str(shared_media("portrait_woman_outdoor.jpg"))
    settings = Settings()
    models = Models.load(settings, store)
    report = evaluate(photo, clip, settings, store, models=models, every=6, max_frames=6).report
    assert report.detail_ratio is not None
    assert report.detail_ratio < artefacts.THRESHOLDS["detail_ratio"][1], report.detail_ratio
