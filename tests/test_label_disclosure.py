"""The visible label stays a disclosure: the venue adds words, the AI marking stays, and a
text that denies it ("Unedited camera feed") is refused, through the admin page's settings
form and through `config.yaml` (`mirror swap-image --config`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask.testing import FlaskClient

from appliance.label_disclosure import disclosed_label
from appliance.label_text import DEFAULT_LABEL_TEXT
from appliance.media.stills import read_ai_metadata
from appliance.modelstore import ModelStore
from tests.test_cli import assert_one_line_error, swap_image
from tests.test_web_support import Mirror, post

DENIALS = [
    ("Unedited camera feed", "unedited"),
    ("Real person, no filter", "no filter"),
    ("100% real", "real"),
    ("Not AI-generated", "not ai"),
    ("NO-FILTER selfie", "no-filter"),
    ("真人直播", "真人"),
    ("无滤镜", "无滤镜"),
    ("Visage réel", "réel"),
]
# (venue text, what is drawn)
DRAWN = [
    ("City Museum", "AI-generated · City Museum"),
    ("AI-generated in real time", "AI-generated in real time"),
    ("欢迎光临", "AI合成 · 欢迎光临"),
    ("AI合成", "AI合成"),
    ("KI-generiert", "KI-generiert"),
]


@pytest.mark.parametrize(("text", "word"), DENIALS)
def test_the_settings_form_refuses_a_label_that_denies_the_disclosure(
    client: FlaskClient, mirror: Mirror, text: str, word: str
) -> None:
    before = mirror.settings_path.read_bytes()
    response = post(client, "/settings", {"label.text": text})
    assert response.status_code == 400
    html = response.text
    error_at = html.index('class="field-error"', html.index('name="label.text"'))
    message = html[error_at : error_at + 500]
    assert "denies that the image is AI-generated" in message, message
    assert mirror.settings_path.read_bytes() == before
    assert mirror.processor.labeler.text == DEFAULT_LABEL_TEXT


def test_the_venue_adds_words_and_the_disclosure_stays(client: FlaskClient, mirror: Mirror) -> None:
    for text, drawn in DRAWN:
        assert post(client, "/settings", {"label.text": text}).status_code == 302, text
        assert mirror.processor.labeler.text == drawn  # what every swapped frame shows
        assert mirror.control.settings().label.text == text  # the venue's words, as given
        assert disclosed_label(text) == drawn


def test_the_liveness_prompt_is_not_given_the_disclosure(
    client: FlaskClient, mirror: Mirror
) -> None:
    assert post(client, "/settings", {"liveness.prompt": "Blink to start"}).status_code == 302
    assert mirror.control.settings().liveness.prompt == "Blink to start"
    assert post(client, "/settings", {"liveness.prompt": "Real faces only"}).status_code == 400


@pytest.mark.parametrize(("text", "word"), DENIALS[:3])
def test_a_config_file_with_a_denying_label_is_one_error_line(
    tmp_path: Path, store: ModelStore, text: str, word: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f'label:\n  text: "{text}"\n', encoding="utf-8")
    out = tmp_path / "out.png"
    proc = swap_image("grace_hopper", store.path("astronaut"), out, "--config", config)
    assert proc.returncode == 1
    assert_one_line_error(proc, "mirror: error:", str(config), "label.text=", repr(word))
    assert not out.exists()


def test_a_venue_label_from_the_config_file_is_drawn_after_the_disclosure(
    tmp_path: Path, store: ModelStore
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text('label:\n  text: "City Museum"\n', encoding="utf-8")
    out = tmp_path / "out.png"
    proc = swap_image("grace_hopper", store.path("astronaut"), out, "--config", config)
    assert proc.returncode == 0, proc.stderr
    assert "labelled 'AI-generated · City Museum'" in proc.stdout
    description = read_ai_metadata(out)["description"]
    assert "visible label: AI-generated · City Museum" in description
