"""The visible AI label: placement, size, Unicode glyphs, speed, errors."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import ImageFont

from appliance.config import LabelPosition, LabelSettings
from appliance.errors import InputError, ModelError, ModelMissingError
from appliance.modelstore import ModelStore
from appliance.vision.label import Labeler, _render_text

POSITIONS: list[LabelPosition] = [
    "top-left",
    "top-right",
    "bottom-left",
    "bottom-right",
    "top",
    "bottom",
]
SHAPES = [(480, 640, 3), (720, 1280, 3)]


@pytest.fixture(scope="module")
def font_path(store: ModelStore) -> Path:
    return store.path("label_font")


def _labeler(
    font: Path,
    text: str = "AI-generated",
    position: LabelPosition = "bottom-right",
    fraction: float = 0.05,
) -> Labeler:
    return Labeler(LabelSettings(text=text, position=position, size_fraction=fraction), font)


def _ink(labeler: Labeler, shape: tuple[int, int, int]) -> np.ndarray:
    """Mask of text ink: the label drawn on a black frame, pixels >= 128."""
    frame = labeler.apply(np.zeros(shape, np.uint8))
    mask: np.ndarray = frame.max(axis=2) >= 128
    return mask


def _components(mask: np.ndarray) -> np.ndarray:
    """Stats (x, y, w, h, area) of ink blobs, left to right."""
    _, _, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    stats = stats[1:]
    return stats[np.argsort(stats[:, 0])]


def _glyph(font: Path, char: str) -> np.ndarray:
    """Ink of one character as the label draws it (a single character is no label)."""
    mask = _render_text(ImageFont.truetype(str(font), 40), char) >= 128
    ys, xs = np.nonzero(mask)
    assert ys.size > 0, f"{char!r} rendered no ink"
    return mask[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("shape", SHAPES)
def test_only_region_changes(
    font_path: Path, position: LabelPosition, shape: tuple[int, int, int]
) -> None:
    labeler = _labeler(font_path, position=position)
    frame = np.random.default_rng(1).integers(0, 256, shape, dtype=np.uint8)
    before = frame.copy()
    assert labeler.apply(frame) is frame
    x0, y0, x1, y1 = labeler.region(shape)
    assert 0 <= x0 < x1 <= shape[1] and 0 <= y0 < y1 <= shape[0]
    changed = (frame != before).any(axis=2)
    inside = np.zeros_like(changed)
    inside[y0:y1, x0:x1] = True
    assert not changed[~inside].any()
    assert changed[inside].mean() > 0.5


def test_apply_is_idempotent_per_frame_size(font_path: Path) -> None:
    labeler = _labeler(font_path)
    base = np.random.default_rng(2).integers(0, 256, (480, 640, 3), dtype=np.uint8)
    first, second = labeler.apply(base.copy()), labeler.apply(base.copy())
    np.testing.assert_array_equal(first, second)


def test_box_is_semi_opaque_with_white_text(font_path: Path) -> None:
    labeler = _labeler(font_path)
    shape = (480, 640, 3)
    x0, y0, x1, y1 = labeler.region(shape)
    white = labeler.apply(np.full(shape, 255, np.uint8))[y0:y1, x0:x1]
    black = labeler.apply(np.zeros(shape, np.uint8))[y0:y1, x0:x1]
    pad = white[(y1 - y0) // 2, 2:6]  # left padding, mid-height: box only
    assert pad.min() > 40 and pad.max() < 200, "box should darken but not hide the frame"
    assert black.max() == 255, "text should be white"
    np.testing.assert_array_equal(white[0, 0], [255, 255, 255])  # rounded corner untouched


@pytest.mark.parametrize("text", ["AI-generated", "AI合成"])
def test_text_renders_ink(font_path: Path, text: str) -> None:
    labeler = _labeler(font_path, text=text)
    shape = (480, 640, 3)
    mask = _ink(labeler, shape)
    x0, y0, x1, y1 = labeler.region(shape)
    assert mask[y0:y1, x0:x1].sum() == mask.sum() > 200
    assert len(_components(mask)) >= len(text.replace("-", "")) - 1


def test_cjk_glyphs_are_not_tofu(font_path: Path) -> None:
    he, cheng = _glyph(font_path, "合"), _glyph(font_path, "成")
    tofu_a, tofu_b = _glyph(font_path, "\u0378"), _glyph(font_path, "\u0379")
    # Two unassigned code points draw the same missing-glyph box ...
    np.testing.assert_array_equal(tofu_a, tofu_b)
    # ... while the ideographs draw distinct shapes, neither of them that box.
    for glyph in (he, cheng):
        assert not (glyph.shape == tofu_a.shape and np.array_equal(glyph, tofu_a))
    assert not (he.shape == cheng.shape and np.array_equal(he, cheng))
    # "合" is a roof over a box (2+ blobs); the notdef box is a single outline.
    assert len(_components(he)) >= 2
    assert len(_components(tofu_a)) == 1


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("shape", SHAPES)
def test_text_height_at_least_five_percent(
    font_path: Path, position: LabelPosition, shape: tuple[int, int, int]
) -> None:
    need = 0.05 * min(shape[:2])
    latin = _components(_ink(_labeler(font_path, position=position), shape))
    assert latin[0, cv2.CC_STAT_HEIGHT] >= need  # the capital "A": cap height
    cjk = _components(_ink(_labeler(font_path, text="AI合成", position=position), shape))
    assert cjk[0, cv2.CC_STAT_HEIGHT] >= need
    assert cjk[:, cv2.CC_STAT_HEIGHT].max() >= need


@pytest.mark.parametrize("shape", SHAPES)
def test_size_fraction_scales_text(font_path: Path, shape: tuple[int, int, int]) -> None:
    small = _labeler(font_path, fraction=0.05)
    big = _labeler(font_path, fraction=0.1)
    assert big.glyph_height(shape) >= 0.1 * min(shape[:2])
    assert big.glyph_height(shape) > 1.8 * small.glyph_height(shape)


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("shape", SHAPES)
def test_position_puts_box_at_edge(
    font_path: Path, position: LabelPosition, shape: tuple[int, int, int]
) -> None:
    height, width = shape[:2]
    x0, y0, x1, y1 = _labeler(font_path, position=position).region(shape)
    margin = (x0, y0, width - x1, height - y1)
    if position.startswith("top"):
        assert 0 < y0 <= 0.05 * height and y1 < height / 2
    else:
        assert 0 < height - y1 <= 0.05 * height and y0 > height / 2
    if position.endswith("left"):
        assert 0 < x0 <= 0.05 * width and x1 < width / 2
    elif position.endswith("right"):
        assert 0 < width - x1 <= 0.05 * width and x0 > width / 2
    else:
        assert abs((x0 + x1) / 2 - width / 2) <= 1
    assert min(margin) > 0


@pytest.mark.parametrize(
    ("text", "fraction", "shape"),
    [
        ("AI-generated", 0.06, (64, 64, 3)),
        ("AI-generated", 0.25, (64, 64, 3)),
        ("AI合成", 0.25, (64, 96, 3)),
        ("AI-generated " * 4, 0.25, (300, 64, 3)),
        ("W" * 64, 0.25, (480, 640, 3)),
    ],
)
def test_small_frames_shrink_to_fit(
    font_path: Path, text: str, fraction: float, shape: tuple[int, int, int]
) -> None:
    labeler = _labeler(font_path, text=text.strip(), fraction=fraction)
    frame = np.random.default_rng(3).integers(0, 256, shape, dtype=np.uint8)
    before = frame.copy()
    labeler.apply(frame)
    x0, y0, x1, y1 = labeler.region(shape)
    assert 0 < x0 < x1 < shape[1] and 0 < y0 < y1 < shape[0]
    changed = (frame != before).any(axis=2)
    assert changed[y0:y1, x0:x1].any()
    changed[y0:y1, x0:x1] = False
    assert not changed.any()


@pytest.mark.parametrize("shape", [(63, 640, 3), (480, 63, 3), (10, 10, 3)])
def test_too_small_frame_is_a_clear_error(font_path: Path, shape: tuple[int, int, int]) -> None:
    labeler = _labeler(font_path)
    with pytest.raises(InputError, match="too small"):
        labeler.apply(np.zeros(shape, np.uint8))
    with pytest.raises(InputError, match="too small"):
        labeler.region(shape)


@pytest.mark.parametrize(
    "frame",
    [np.zeros((100, 100), np.uint8), np.zeros((100, 100, 4), np.uint8), np.zeros((100, 100, 3))],
)
def test_bad_frame_is_rejected(font_path: Path, frame: np.ndarray) -> None:
    with pytest.raises(InputError):
        _labeler(font_path).apply(frame)


def test_missing_font_is_a_model_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.otf"
    with pytest.raises(ModelMissingError, match=r"label font .*nope\.otf.* missing"):
        _labeler(missing)


def test_unreadable_font_is_a_model_error(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.otf"
    garbage.write_bytes(b"this is not a font file" * 10)
    with pytest.raises(ModelError, match=r"garbage\.otf cannot be loaded"):
        _labeler(garbage)


def test_patch_is_rendered_once_per_frame_size(
    font_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    labeler = _labeler(font_path)
    calls: list[tuple[int, int]] = []
    render = Labeler._render

    def counting(self: Labeler, text: str, height: int, width: int) -> object:
        calls.append((height, width))
        return render(self, text, height, width)

    monkeypatch.setattr(Labeler, "_render", counting)
    for _ in range(5):
        labeler.apply(np.zeros((480, 640, 3), np.uint8))
        labeler.apply(np.zeros((720, 1280, 3), np.uint8))
    assert calls == [(480, 640), (720, 1280)]
