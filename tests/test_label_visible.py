"""The label can never be removed: every accepted text shows, every invisible one is refused.

A text enters through the config file (``mirror swap-image --config``), the
admin page's settings form and the live apply; each is checked here through
that interface. Every accepted label is rendered and its ink measured; a
render failure at draw time falls back to the default label, still visible.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from flask.testing import FlaskClient
from PIL import ImageDraw

from appliance.config import LabelSettings, Settings, settings_from_dict, updated
from appliance.errors import ConfigError
from appliance.label_disclosure import disclosed_label
from appliance.label_text import DEFAULT_LABEL_TEXT, label_text_problem
from appliance.modelstore import ModelStore
from appliance.vision.label import Labeler
from tests.test_cli import assert_one_line_error, swap_image
from tests.test_web_support import Mirror, post

ACCEPTED = [
    DEFAULT_LABEL_TEXT,
    "AI合成",
    "AI生成",
    "KI-generiert",
    "généré par IA",  # precomposed accents
    "gene\u0301re\u0301 par IA",  # combining accents
    "Synthèse IA 2024",
    "2024",
    "AI",
    "人工智能",
    "ИИ-контент",
]
# (text, what the refusal names)
REFUSED = [
    ("AI\ngenerated", "U+000A"),  # stopped every frame (raqm_layout() failed)
    ("AI\u2028generated", "U+2028"),  # line separator
    ("\u200b\u200b\u200b", "U+200B"),  # zero-width space: nothing drawn
    ("AI\u200bgenerated", "U+200B"),
    ("\x00\x00", "U+0000"),  # drew the missing-glyph box
    ("AI-generated\u202e", "U+202E"),  # right-to-left override
    ("\u3164\u3164\u3164", "U+3164"),  # Hangul filler: a letter that draws nothing
    ("\u2800\u2800\u2800", "U+2800"),  # braille blank
    ("AI \U0001f916", "U+1F916"),  # not in the font: a box
    ("\u0378\u0379", "U+0378"),  # unassigned
    ("\ue000\ue001", "U+E000"),  # private use
    ("A", "at least 2 visible"),
    ("   ", "at least 2 visible"),
    ("--", "too little ink"),
    ("..", "too little ink"),
    ("~~~", "too little ink"),
]
SHAPES = [(480, 640, 3), (720, 1280, 3), (240, 320, 3)]


@pytest.fixture(scope="module")
def font_path(store: ModelStore) -> Path:
    return store.path("label_font")


def _ink_in_patch(labeler: Labeler, shape: tuple[int, int, int]) -> tuple[int, int]:
    """(bright pixels on black, dark pixels on white) inside the label's box."""
    x0, y0, x1, y1 = labeler.region(shape)
    on_black = labeler.apply(np.zeros(shape, np.uint8))[y0:y1, x0:x1]
    on_white = labeler.apply(np.full(shape, 255, np.uint8))[y0:y1, x0:x1]
    bright = int((on_black.min(axis=2) >= 200).sum())
    dark = int((on_white.max(axis=2) <= 110).sum())
    return bright, dark


@pytest.mark.parametrize("text", ACCEPTED)
def test_every_accepted_label_renders_visible_ink(font_path: Path, text: str) -> None:
    settings = settings_from_dict({"label": {"text": text, "size_fraction": 0.05}})
    assert settings.label.text == text
    for shape in SHAPES:
        labeler = Labeler(settings.label, font_path)
        assert labeler.text == disclosed_label(text)  # the disclosure kept, no fallback
        cap = labeler.glyph_height(shape)
        bright, dark = _ink_in_patch(labeler, shape)
        # white glyphs on black, and the dark box on white: both well above a floor
        assert bright >= 0.25 * cap * cap, (text, shape, bright, cap)
        assert dark >= 2 * cap * cap, (text, shape, dark, cap)


@pytest.mark.parametrize(("text", "needle"), REFUSED)
def test_invisible_labels_are_refused_naming_the_key(
    font_path: Path, text: str, needle: str
) -> None:
    assert needle in (label_text_problem(text, font_path) or "")
    with pytest.raises(ConfigError) as info:
        updated(Settings(), {"label": {"text": text}})
    assert "label.text=" in str(info.value) and needle in str(info.value)
    with pytest.raises(ConfigError, match=r"liveness\.prompt="):
        updated(Settings(), {"liveness": {"prompt": text}})


@pytest.mark.parametrize(
    ("text", "needle"),
    [("AI\ngenerated", "U+000A"), ("\u200b\u200b", "U+200B"), ("\x00\x00", "U+0000")],
)
def test_swap_image_with_an_invisible_label_is_one_error_line(
    tmp_path: Path, store: ModelStore, text: str, needle: str
) -> None:
    config = tmp_path / "config.yaml"
    escaped = text.encode("unicode_escape").decode("ascii")  # YAML double-quoted escapes
    config.write_text(f'label:\n  text: "{escaped}"\n', encoding="utf-8")
    out = tmp_path / "out.png"
    proc = swap_image("grace_hopper", store.path("astronaut"), out, "--config", config)
    assert proc.returncode == 1
    assert_one_line_error(proc, "mirror: error:", str(config), "label.text=", needle)
    assert not out.exists()


@pytest.mark.parametrize("text", ["AI\ngenerated", "\u200b\u200b", "\x00\x00", "AI 🤖"])
def test_settings_form_refuses_invisible_labels(
    client: FlaskClient, mirror: Mirror, text: str
) -> None:
    before = mirror.settings_path.read_bytes()
    response = post(client, "/settings", {"label.text": text})
    assert response.status_code == 400
    html = response.text
    error_at = html.index('class="field-error"', html.index('name="label.text"'))
    assert "U+" in html[error_at : error_at + 300]
    assert mirror.settings_path.read_bytes() == before
    assert mirror.processor.labeler.text == DEFAULT_LABEL_TEXT


def test_a_bypassed_invalid_label_falls_back_to_the_default(
    font_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A settings object made without validation (model_construct) still shows a label."""
    bad = LabelSettings.model_construct(text="AI\ngenerated", position="bottom-right")
    with caplog.at_level(logging.WARNING, logger="appliance.vision.label"):
        labeler = Labeler(bad, font_path)
    assert labeler.text == DEFAULT_LABEL_TEXT
    assert "U+000A" in caplog.text and "default label" in caplog.text
    bright, _ = _ink_in_patch(labeler, (480, 640, 3))
    assert bright >= 0.25 * labeler.glyph_height((480, 640, 3)) ** 2


def test_a_render_failure_at_draw_time_falls_back_to_the_default(
    font_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    labeler = Labeler(LabelSettings(text="AI合成"), font_path)
    draw_text = ImageDraw.ImageDraw.text

    def failing(
        self: ImageDraw.ImageDraw, xy: object, text: str, *args: object, **kw: object
    ) -> None:
        if text == "AI合成":
            raise RuntimeError("raqm_layout() failed")
        draw_text(self, xy, text, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(ImageDraw.ImageDraw, "text", failing)
    shape = (480, 640, 3)
    with caplog.at_level(logging.WARNING, logger="appliance.vision.label"):
        frame = labeler.apply(np.zeros(shape, np.uint8))
    assert "raqm_layout() failed" in caplog.text and "'AI-generated'" in caplog.text
    x0, y0, x1, y1 = labeler.region(shape)
    assert int((frame[y0:y1, x0:x1].min(axis=2) >= 200).sum()) > 200
    assert not frame[:y0].any() and not frame[y1:].any()  # only the label's box was drawn


def test_the_live_apply_draws_only_checked_labels(client: FlaskClient, mirror: Mirror) -> None:
    assert post(client, "/settings", {"label.text": "AI合成"}).status_code == 302
    assert mirror.processor.labeler.text == "AI合成"
    assert post(client, "/settings", {"label.text": "AI\u200b合成"}).status_code == 400
    assert mirror.processor.labeler.text == "AI合成"  # the last good label stays
