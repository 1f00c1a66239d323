"""Admin UI settings: a form built from the model; a bad value changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from flask.testing import FlaskClient

from appliance.config import Settings, load_settings
from appliance.errors import ConfigError
from tests.test_web_support import Mirror, build_app, build_mirror, login, post
from web_ui.settings_form import leaves


def test_the_form_has_every_field_of_the_model(client: FlaskClient) -> None:
    html = client.get("/settings").text
    for leaf in leaves(Settings):
        assert f'name="{leaf.key}"' in html, leaf.key
    assert 'name="swapping"' in html and 'name="active_identity"' in html
    assert "Applies at the next start." in html  # swap.swapper at least
    assert 'min="0.05" max="0.25"' in html  # label.size_fraction's bounds


def test_a_good_change_is_saved_and_applied_live(client: FlaskClient, mirror: Mirror) -> None:
    response = post(
        client,
        "/settings",
        {
            "label.text": "KI-generiert",
            "label.position": "top-left",
            "swap.blend": "poisson",
            "swap.keep_mouth": ["false"],  # the unticked checkbox sends only its hidden field
            "pipeline.redetect_every": "9",
            "pipeline.faces": "all",
            "pipeline.max_faces": "2",
            "detector.min_score": "0.6",
        },
    )
    assert response.status_code == 302
    assert "Saved and applied." in client.get("/settings").text
    saved = load_settings(mirror.settings_path)
    assert saved.label.text == "KI-generiert" and saved.swap.blend == "poisson"
    assert saved.swap.keep_mouth is False and saved.label.size_fraction == 0.06
    assert mirror.control.settings() == saved
    processor = mirror.processor
    assert processor.labeler.settings.text == "KI-generiert"
    assert processor.labeler.settings.position == "top-left"
    assert processor.swapper.settings.blend == "poisson"
    assert processor.swapper.settings.keep_mouth is False
    assert processor.redetect_every == 9 and processor.max_faces == 2
    assert processor.analyzer.detector.min_score == 0.6
    # the upload preview follows the new look too
    assert mirror.control._enroller.previewer.labeler.settings.text == "KI-generiert"


def test_a_change_that_needs_a_restart_says_so(client: FlaskClient, mirror: Mirror) -> None:
    post(client, "/settings", {"swap.swapper": "inswapper_128", "pipeline.target_fps": "25"})
    page = client.get("/settings").text
    assert "Applies at the next start: swap.swapper, pipeline.target_fps." in page
    saved = load_settings(mirror.settings_path)
    assert saved.swap.swapper == "inswapper_128" and saved.pipeline.target_fps == 25.0
    assert mirror.processor.swapper.settings.swapper == "geometric"  # the running one stays


@pytest.mark.parametrize(
    ("form", "key", "message"),
    [
        ({"label.size_fraction": "0.9"}, "label.size_fraction", "less than or equal to 0.25"),
        ({"label.size_fraction": "abc"}, "label.size_fraction", "enter a number"),
        ({"pipeline.target_fps": "nan"}, "pipeline.target_fps", "enter a number"),
        ({"pipeline.redetect_every": "2.5"}, "pipeline.redetect_every", "enter a whole number"),
        ({"label.position": "middle"}, "label.position", "Input should be"),
        ({"label.text": ""}, "label.text", "at least 1 character"),
        ({"swap.color_match": "maybe"}, "swap.color_match", "tick or untick"),
    ],
)
def test_a_bad_value_shows_a_field_error_and_changes_nothing(
    client: FlaskClient, mirror: Mirror, form: dict[str, str], key: str, message: str
) -> None:
    before = mirror.settings_path.read_bytes()
    good = {"label.text": "Changed", "swap.blend": "poisson"}
    response = post(client, "/settings", {**good, **form})
    assert response.status_code == 400
    html = response.text
    assert "Nothing was changed" in html
    field_at = html.index(f'name="{key}"')
    error_at = html.index('class="field-error"', field_at)
    assert message in html[error_at : error_at + 300]
    assert html.index('<div class="field', field_at) > error_at  # the error is in that field
    assert mirror.settings_path.read_bytes() == before
    assert mirror.control.settings() == Settings()
    assert mirror.processor.labeler.settings.text == "AI-generated"
    assert mirror.processor.swapper.settings.blend == "feather"


def test_a_refused_value_from_the_profile_check_changes_nothing(tmp_path: Path) -> None:
    def check(settings: Settings) -> None:
        if settings.pipeline.target_fps > 20:
            raise ConfigError("pipeline.target_fps=30.0: this hardware profile allows at most 20")

    mirror = build_mirror(tmp_path, check=check)
    try:
        client = build_app(mirror).test_client()
        login(client)
        before = mirror.settings_path.read_bytes()
        response = post(client, "/settings", {"pipeline.target_fps": "30", "label.text": "Other"})
        assert response.status_code == 400 and "allows at most 20" in response.text
        assert mirror.settings_path.read_bytes() == before
        assert mirror.processor.labeler.settings.text == "AI-generated"
        assert post(client, "/settings", {"pipeline.target_fps": "15"}).status_code == 302
    finally:
        mirror.control.close()


def test_swapping_and_identity_from_the_settings_page(client: FlaskClient, mirror: Mirror) -> None:
    before = mirror.settings_path.read_bytes()
    response = post(client, "/settings", {"active_identity": "../x", "label.text": "Other"})
    assert response.status_code == 400 and "no identity of that name" in response.text
    assert mirror.settings_path.read_bytes() == before
    response = post(client, "/settings", {"swapping": ["false"]})
    assert response.status_code == 302
    assert mirror.processor.identity is None and not mirror.control.swapping_enabled
    assert mirror.control.active_identity() == "grace_hopper"
    assert mirror.settings_path.read_bytes() == before  # no settings changed: not rewritten
    post(client, "/settings", {"swapping": ["false", "true"]})
    assert getattr(mirror.processor.identity, "name", None) == "grace_hopper"


def test_the_saved_file_stays_a_valid_config(client: FlaskClient, mirror: Mirror) -> None:
    post(client, "/settings", {"label.text": "AI合成"})
    data = yaml.safe_load(mirror.settings_path.read_text(encoding="utf-8"))
    assert data["label"]["text"] == "AI合成"
    assert oct(mirror.settings_path.stat().st_mode & 0o777) == "0o600"
