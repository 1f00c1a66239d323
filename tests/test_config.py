"""Settings: validation with key and value named, atomic save, last good file kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from appliance.config import Settings, load_settings, save_settings, updated
from appliance.errors import ConfigError


def test_defaults_and_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    assert load_settings(path) == Settings()
    changed = updated(Settings(), {"label": {"text": "AI合成"}, "swap": {"blend": "poisson"}})
    save_settings(path, changed)
    assert load_settings(path) == changed
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"label": {"size_fraction": 0.01}}, "label.size_fraction=0.01"),
        ({"swap": {"blend": "smear"}}, "swap.blend='smear'"),
        ({"detector": {"colour": 1}}, "detector.colour=1"),
    ],
)
def test_bad_value_names_key_and_keeps_last_good(
    tmp_path: Path, changes: dict[str, dict[str, object]], needle: str
) -> None:
    path = tmp_path / "config.yaml"
    save_settings(path, Settings())
    before = path.read_bytes()
    with pytest.raises(ConfigError) as info:
        save_settings(path, updated(load_settings(path), changes))
    assert needle in str(info.value)
    assert path.read_bytes() == before


def test_unreadable_config_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("label: [unclosed\n")
    with pytest.raises(ConfigError, match="cannot read config"):
        load_settings(path)
