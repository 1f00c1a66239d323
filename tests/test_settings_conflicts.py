"""Two staff on the settings page at once, and what a save writes into config.yaml.

Through a real waitress server on loopback, each member of staff with their own
session, sending the whole form their page showed (as a browser does): a save
from a page opened before another one's save keeps that other change; the same
field changed both ways is a 409 that names it, and nothing is saved. A save
writes only the keys changed, so the next start on another hardware profile
takes that profile's rate (the real `mirror run`).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from appliance.config import Settings, load_settings
from appliance.modelstore import ModelStore
from tests.test_run_cmd import MIRROR, _data_dir, _start
from tests.test_web_support import FAST_HASH, PASSWORD, Mirror, build_app, build_mirror
from tests.web_client import Staff, admin_url, changed, form_fields
from web_ui.auth_store import AuthStore
from web_ui.server import WebServer, serve


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Mirror, WebServer]]:
    mirror = build_mirror(tmp_path)
    server = serve(build_app(mirror), "127.0.0.1", 0)
    try:
        yield mirror, server
    finally:
        server.stop()
        mirror.control.close()


def _staff(server: WebServer) -> Staff:
    staff = Staff(server.url)
    staff.login(PASSWORD)
    return staff


def test_a_save_from_an_older_page_keeps_the_changes_saved_since(
    served: tuple[Mirror, WebServer],
) -> None:
    mirror, server = served
    alice, bob = _staff(server), _staff(server)
    alices_page, bobs_page = alice.form("/settings"), bob.form("/settings")

    status, html = alice.post("/settings", changed(alices_page, label__text="Label by Alice"))
    assert status == 200 and "Saved and applied." in html
    status, html = bob.post("/settings", changed(bobs_page, swap__blend="poisson"))
    assert status == 200 and "Saved and applied." in html, html[:2000]

    now = mirror.control.settings()
    assert now.label.text == "Label by Alice" and now.swap.blend == "poisson"
    assert mirror.processor.labeler.settings.text == "Label by Alice"  # in force, not undone
    assert load_settings(mirror.settings_path) == now


def test_a_page_opened_before_the_switch_was_turned_off_leaves_it_off(
    served: tuple[Mirror, WebServer],
) -> None:
    mirror, server = served
    alice, bob = _staff(server), _staff(server)
    alices_page = alice.form("/settings")  # swapping ticked
    status, _ = bob.post("/swapping", changed(bob.form("/", "/swapping"), enabled="false"))
    assert status == 200 and not mirror.control.swapping_enabled
    status, _ = alice.post("/settings", changed(alices_page, detector__min_score="0.6"))
    assert status == 200
    assert not mirror.control.swapping_enabled and mirror.processor.identity is None
    assert mirror.control.settings().detector.min_score == 0.6


def test_the_same_field_changed_both_ways_is_a_conflict_that_names_it(
    served: tuple[Mirror, WebServer],
) -> None:
    mirror, server = served
    alice, carol = _staff(server), _staff(server)
    carols_page = carol.form("/settings")
    alice.post("/settings", changed(alice.form("/settings"), label__text="Label by Alice"))
    before = mirror.settings_path.read_bytes()

    edit = changed(carols_page, label__text="Label by Carol", swap__blend="poisson")
    status, html = carol.post("/settings", edit)
    assert status == 409
    assert "someone changed the same settings" in html
    text = html.replace("&#39;", "'")
    assert "label.text: 'AI-generated' when you opened the page, " in text
    assert "'Label by Alice' now, yours 'Label by Carol'" in text
    assert mirror.settings_path.read_bytes() == before  # nothing saved
    assert mirror.control.settings().label.text == "Label by Alice"
    assert mirror.control.settings().swap.blend == "feather"

    # the page shown again: the settings in force with Carol's changes over them;
    # saving it again is Carol's informed choice
    status, html = carol.post("/settings", form_fields(html, "/settings"))
    assert status == 200 and "Saved and applied." in html
    now = mirror.control.settings()
    assert now.label.text == "Label by Carol" and now.swap.blend == "poisson"


def test_a_page_older_than_every_kept_version_changes_nothing(
    served: tuple[Mirror, WebServer],
) -> None:
    mirror, server = served
    dave = _staff(server)
    page = changed(dave.form("/settings"), version="0" * 20, label__text="Label by Dave")
    status, html = dave.post("/settings", page)
    assert status == 409 and "older than the settings in force" in html
    assert "label.text: yours" in html
    assert mirror.control.settings() == Settings()


def test_a_web_save_writes_only_what_changed_so_a_new_profile_brings_its_rate(
    store: ModelStore, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    web = _data_dir(data, store)
    AuthStore(web / "auth.json", FAST_HASH).provision(PASSWORD, must_change=False)
    env = {**os.environ, "MIRROR_DATA_DIR": str(data)}
    proc = _start(["--profile", "generic-cpu", "--no-preview", "--status-every", "0"], env)
    try:
        staff = Staff(admin_url(proc))
        staff.login(PASSWORD)
        page = staff.form("/settings")
        assert ("pipeline.target_fps", "10.0") in page  # the profile's rate, in force
        status, html = staff.post("/settings", changed(page, label__text="KI-generiert"))
        assert status == 200 and "Saved and applied." in html
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err

    again = subprocess.run(
        [*MIRROR, "run", "--profile", "x86-cpu", "--frames", "3", "--no-preview", "--no-web"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    assert again.returncode == 0, again.stderr
    assert "mirror: target      30 fps, the profile's" in again.stderr, again.stderr
    saved = yaml.safe_load((data / "config.yaml").read_text(encoding="utf-8"))
    assert saved == {"label": {"text": "KI-generiert"}}  # only what staff changed
