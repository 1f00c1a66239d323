"""Config loading that cannot be blown up: alias bombs, huge or deep files, loose types.

Each case goes through the real interface: ``load_settings`` on a real file,
the ``mirror`` command in a subprocess (under a 1 GiB address-space limit for
the alias bomb), and the admin page's settings form on the real Flask app.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from appliance.config import Settings, load_settings
from appliance.config_yaml import MAX_CONFIG_BYTES
from appliance.errors import ConfigError
from appliance.modelstore import ModelStore
from tests.test_cli import MIRROR, assert_one_line_error, swap_image
from tests.test_web_support import Mirror, post

GIB = 1 << 30


def billion_laughs(levels: int = 10) -> str:
    """9**levels "lol"s from a few hundred bytes of anchors and aliases."""
    lines = ['lol0: &a0 ["lol"]']
    for i in range(1, levels):
        lines.append(f"lol{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    lines.append(f"label: {{text: *a{levels - 1}}}")
    return "\n".join(lines) + "\n"


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (GIB, GIB))


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


LOAD_AND_TIME = """
import sys, time
from pathlib import Path
from appliance.config import load_settings
from appliance.errors import ConfigError
start = time.monotonic()
try:
    load_settings(Path(sys.argv[1]))
except ConfigError as exc:
    print(f"{time.monotonic() - start:.3f} {exc}")
"""


def test_billion_laughs_is_refused_fast_in_bounded_memory(tmp_path: Path) -> None:
    path = _config(tmp_path, billion_laughs())
    proc = subprocess.run(
        [sys.executable, "-c", LOAD_AND_TIME, str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        preexec_fn=_limit_memory,
        check=False,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    seconds, message = proc.stdout.strip().split(" ", 1)
    assert float(seconds) < 2.0
    assert str(path) in message and "anchors and aliases" in message and "\n" not in message


def test_billion_laughs_through_the_cli_is_one_error_line(
    tmp_path: Path, store: ModelStore
) -> None:
    path = _config(tmp_path, billion_laughs())
    out = tmp_path / "out.png"
    proc = subprocess.run(
        [
            *MIRROR,
            "swap-image",
            "--config",
            str(path),
            "--identity",
            "grace_hopper",
            "--input",
            str(store.path("astronaut")),
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        preexec_fn=_limit_memory,
        check=False,
    )
    assert proc.returncode == 1
    assert_one_line_error(proc, "mirror: error:", str(path), "anchors and aliases")
    assert not out.exists()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("a: &x 1\nb: 2\n", "anchors and aliases"),
        ("label: {text: &t AI合成}\nliveness: {prompt: *t}\n", "anchors and aliases"),
        ("[" * 40 + "]" * 40, "nesting deeper than"),
        ("label: {text: AI合成}\nlabel: {text: KI}\n", "key 'label' is given twice"),
        ("#" * (MAX_CONFIG_BYTES + 1), "larger than 64 KiB"),
        ("swap: {keep_mouth: !!bool yes}\n", "'yes' is not true or false"),
        ("pipeline: {redetect_every: !!int 0x10}\n", "'0x10' is not an integer"),
        ("label: !!python/object:os.system {}\n", "could not determine a constructor"),
    ],
)
def test_refused_yaml_is_one_clear_line(tmp_path: Path, text: str, needle: str) -> None:
    path = _config(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    message = str(info.value)
    assert needle in message and str(path) in message and "\n" not in message


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("swap: {keep_mouth: maybe}", "swap.keep_mouth='maybe'"),
        ("swap: {keep_mouth: yes}", "swap.keep_mouth='yes'"),  # YAML 1.1 made this True
        ("swap: {keep_mouth: off}", "swap.keep_mouth='off'"),
        ("swap: {keep_mouth: 'false'}", "swap.keep_mouth='false'"),  # a string, not a boolean
        ("swap: {keep_mouth: 1}", "swap.keep_mouth=1"),
        ("pipeline: {redetect_every: 1_6}", "pipeline.redetect_every='1_6'"),
        ("pipeline: {redetect_every: ١٦}", "pipeline.redetect_every='١٦'"),
        ("pipeline: {redetect_every: +5}", "pipeline.redetect_every='+5'"),
        ("pipeline: {redetect_every: '16'}", "pipeline.redetect_every='16'"),
        ("pipeline: {redetect_every: 1:30}", "pipeline.redetect_every='1:30'"),
        ("pipeline: {redetect_every: 16.0}", "pipeline.redetect_every=16.0"),
        ("pipeline: {target_fps: 2_5.0}", "pipeline.target_fps='2_5.0'"),
        ("pipeline: {target_fps: .inf}", "pipeline.target_fps='.inf'"),
    ],
)
def test_loose_types_are_field_errors(tmp_path: Path, text: str, key: str) -> None:
    path = _config(tmp_path, text + "\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert key in str(info.value)


def test_strict_types_still_read_plain_yaml(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        """\
        label: {text: "AI合成", size_fraction: 0.1}
        swap: {keep_mouth: false, feather_fraction: .1}
        pipeline: {redetect_every: 010, target_fps: 24, latency_budget_ms: 1.5e2}
        liveness: {prompt: null}
        """,
    )
    settings = load_settings(path)
    assert settings.label.text == "AI合成" and settings.swap.keep_mouth is False
    assert settings.pipeline.redetect_every == 10  # decimal, never YAML 1.1's octal 8
    assert settings.pipeline.target_fps == 24.0 and settings.pipeline.latency_budget_ms == 150.0
    assert settings.swap.feather_fraction == 0.1 and settings.liveness.prompt is None


def test_missing_default_config_gives_defaults(tmp_path: Path) -> None:
    assert load_settings(tmp_path / "config.yaml") == Settings()


def test_missing_explicit_config_is_an_error(tmp_path: Path, store: ModelStore) -> None:
    missing = tmp_path / "nope.yaml"
    out = tmp_path / "out.png"
    proc = swap_image("grace_hopper", store.path("astronaut"), out, "--config", missing)
    assert proc.returncode == 1
    assert_one_line_error(proc, f"mirror: error: config file {missing} not found")
    assert not out.exists()


@pytest.mark.parametrize(
    ("field", "raw", "message"),
    [
        ("pipeline.redetect_every", "1_6", "enter a whole number"),
        ("pipeline.redetect_every", "١٦", "enter a whole number"),
        ("pipeline.redetect_every", "+5", "enter a whole number"),
        ("pipeline.target_fps", "2_5", "enter a number"),
        ("pipeline.target_fps", "٢٥", "enter a number"),
        ("swap.keep_mouth", "maybe", "tick or untick"),
    ],
)
def test_form_refuses_loose_numbers(
    client: FlaskClient, mirror: Mirror, field: str, raw: str, message: str
) -> None:
    before = mirror.settings_path.read_bytes()
    response = post(client, "/settings", {field: raw})
    assert response.status_code == 400
    html = response.text
    error_at = html.index('class="field-error"', html.index(f'name="{field}"'))
    assert message in html[error_at : error_at + 300]
    assert mirror.settings_path.read_bytes() == before


def test_form_swapping_maybe_changes_nothing(client: FlaskClient, mirror: Mirror) -> None:
    before = mirror.settings_path.read_bytes()
    response = post(client, "/settings", {"swapping": "maybe"})
    assert response.status_code == 400 and "tick or untick" in response.text
    assert mirror.control.swapping_enabled and mirror.processor.identity is not None
    assert mirror.settings_path.read_bytes() == before


def test_dashboard_swapping_maybe_changes_nothing(client: FlaskClient, mirror: Mirror) -> None:
    response = post(client, "/swapping", {"enabled": "maybe"})
    assert response.status_code == 302
    assert mirror.control.swapping_enabled and mirror.processor.identity is not None
    assert "Swapping was not changed" in client.get("/").text
    assert post(client, "/swapping", {"enabled": "false"}).status_code == 302
    assert not mirror.control.swapping_enabled
