"""Admin UI parts on their own: web config, lockout bookkeeping, log buffer, secret key, uploads."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from appliance.control.api import ApplyResult
from appliance.control.live_apply import applies_live
from appliance.control.log_buffer import LogBuffer
from appliance.control.uploads import MAX_STORED_SIDE, check_upload, stored_jpeg
from appliance.errors import UploadError
from appliance.pipeline.telemetry import Telemetry
from tests.test_web_support import FakeClock, encode, photo
from web_ui.config import WebConfig, load_web_config
from web_ui.errors import WebConfigError
from web_ui.metrics import render_metrics
from web_ui.ratelimit import LockTable
from web_ui.secret_key import KEY_BYTES, load_or_create_secret


def test_web_config_defaults_to_localhost(tmp_path: Path) -> None:
    config = load_web_config(tmp_path / "web.yaml")
    assert config == WebConfig() and config.host == "127.0.0.1"


def test_web_config_from_file(tmp_path: Path) -> None:
    path = tmp_path / "web.yaml"
    path.write_text("host: 192.168.1.20\nport: 8443\n")
    config = load_web_config(path)
    assert (config.host, config.port) == ("192.168.1.20", 8443)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("host: mirror.local\n", "host='mirror.local': Value error, must be an IP address"),
        ("port: 70000\n", "port=70000"),
        ("colour: red\n", "colour='red'"),
        ("- a list\n", "must be a mapping"),
    ],
)
def test_a_bad_web_config_names_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "web.yaml"
    path.write_text(text)
    with pytest.raises(WebConfigError, match=message.replace("(", r"\(")):
        load_web_config(path)


def test_the_lock_table_forgets_success_and_stays_bounded() -> None:
    clock = FakeClock()
    table = LockTable(max_failures=2, lock_s=10, max_lock_s=25, max_keys=3)

    def fail(key: str) -> None:
        table.fail(key, clock.now)

    fail("a")
    table.clear("a")
    fail("a")
    assert table.locked_for("a", clock.now) == 0  # the success cleared the first failure
    fail("a")
    assert table.locked_for("a", clock.now) == 10 and table.locked_for("b", clock.now) == 0
    clock.now += 10
    fail("a")
    table.forgive("a")  # a right password takes its counted failure back
    fail("a")
    fail("a")
    assert table.locked_for("a", clock.now) == 20
    clock.now += 20
    fail("a")
    fail("a")
    assert table.locked_for("a", clock.now) == 25  # capped
    for key in ("k1", "k2", "k3", "k4"):
        fail(key)
    assert table.locked_for("a", clock.now) == 25  # a flood of new keys does not free a locked one
    assert len(table) == 3
    clock.now += 25
    fail("k5")
    assert table.locked_for("a", clock.now) == 0 and "a" not in table


def test_the_log_buffer_keeps_recent_warnings_only() -> None:
    buffer = LogBuffer(capacity=3)
    log = logging.getLogger("web_ui.test_buffer")
    log.propagate = False
    buffer.attach(log)
    try:
        log.info("not kept")
        for i in range(5):
            log.warning("warning %d", i)
        try:
            raise ValueError("bad value")
        except ValueError:
            log.exception("it failed")
    finally:
        buffer.detach()
    log.warning("after detach")
    entries = buffer.entries()
    assert [e.message for e in entries] == [
        "it failed (ValueError: bad value)",
        "warning 4",
        "warning 3",
    ]
    assert entries[0].level == "ERROR" and entries[0].logger == "web_ui.test_buffer"


def test_the_secret_key_is_kept_private(tmp_path: Path) -> None:
    path = tmp_path / "web" / "secret_key"
    key = load_or_create_secret(path)
    assert len(key) == KEY_BYTES and stat.S_IMODE(path.stat().st_mode) == 0o600
    path.chmod(0o644)
    assert load_or_create_secret(path) == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_bytes(b"short")
    replaced = load_or_create_secret(path)
    assert replaced != key and len(replaced) == KEY_BYTES


def test_uploads_are_decoded_by_content_and_stored_small() -> None:
    grace = photo("grace_hopper")
    for ext, name, kind in ((".jpg", "g.JPEG", "image/jpeg"), (".png", "g", ""),
                            (".webp", "g.webp", "application/octet-stream")):  # fmt: skip
        image = check_upload(encode(grace, ext), name, kind)
        assert image.shape == grace.shape
    with pytest.raises(UploadError, match="BMP images are not supported"):
        check_upload(encode(grace, ".bmp"), "g.bmp")
    big = photo("astronaut").repeat(6, axis=0).repeat(6, axis=1)  # 3072 x 3072
    small, jpeg = stored_jpeg(big)
    assert max(small.shape[:2]) == MAX_STORED_SIDE and jpeg[:2] == b"\xff\xd8"


def test_which_settings_apply_live() -> None:
    assert applies_live("label.text") and applies_live("swap.blend")
    assert applies_live("pipeline.redetect_every") and applies_live("detector.min_score")
    assert not applies_live("swap.swapper") and not applies_live("pipeline.target_fps")
    assert applies_live("liveness.mode")  # a live camera's gate changes between frames
    assert not applies_live("thermal.hold_s")
    assert applies_live("thermal.hold_s", ["thermal"])
    assert ApplyResult().message() == "Saved (nothing changed)."
    later = ApplyResult(("swap.swapper", "label.text"), ("swap.swapper",))
    assert later.message() == "Saved. Applies at the next start: swap.swapper."


def test_metrics_of_a_fresh_telemetry_parse() -> None:
    text = render_metrics(Telemetry().snapshot()).decode()
    names = {family.name for family in text_string_to_metric_families(text)}
    assert {"mirror_running", "mirror_fps", "mirror_frames_shown", "mirror_e2e_latency_ms"} <= names


def test_web_config_refuses_an_alias_bomb_quickly(tmp_path: Path) -> None:
    """web.yaml goes through the settings file's strict loader: no anchors or aliases."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(ord("b"), ord("j")):
        prev = chr(i - 1)
        lines.append(f"{chr(i)}: &{chr(i)} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]")
    path = tmp_path / "web.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(WebConfigError, match=r"anchor|alias"):
        load_web_config(path)
