"""``/metrics`` on A/B updates, scraped from a real waitress server over HTTPS with the
scrape token: ``mirror_update_in_progress`` and ``mirror_update_failed`` from the status
file the installer writes, ``mirror_slot_info`` from RAUC (a fake ``rauc`` first on PATH,
``tests.fake_rauc``), asked at most once a minute and never while a request waits.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from appliance.paths import DATA_DIR_ENV
from appliance.updates.queue import UpdateStatus, write_status
from appliance.updates.recent import booted_at
from tests.fake_rauc import install_fake_rauc, path_with, rauc_calls
from tests.test_fleet_view import scrape
from tests.test_web_support import Mirror
from tests.waiting import wait_for
from tests.web_served import serve_tls
from web_ui.server import WebServer

MINUTE_S = 60.0


@pytest.fixture
def rauc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = install_fake_rauc(tmp_path / "bin")
    monkeypatch.setenv("PATH", path_with(folder))
    return folder


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "device-data"
    monkeypatch.setenv(DATA_DIR_ENV, str(folder))
    return folder


@pytest.fixture
def served(app: Flask, mirror: Mirror) -> Iterator[WebServer]:
    server = serve_tls(app, mirror.web_dir)
    try:
        yield server
    finally:
        server.stop()


def _value(samples: dict[str, list[Any]], name: str) -> float:
    (sample,) = samples[name]
    return float(sample.value)


def test_the_status_file_says_whether_an_update_runs_or_failed(
    served: WebServer, mirror: Mirror, data: Path, rauc: Path
) -> None:
    samples = scrape(served, mirror)
    assert _value(samples, "mirror_update_in_progress") == 0  # no update ever ran
    assert _value(samples, "mirror_update_failed") == 0

    write_status(data, UpdateStatus("downloading", "12% of 310 MB", 12, "https://u", time.time()))
    samples = scrape(served, mirror)
    assert _value(samples, "mirror_update_in_progress") == 1
    assert _value(samples, "mirror_update_failed") == 0

    write_status(data, UpdateStatus("failed", "download: HTTP 404", None, "https://u", time.time()))
    samples = scrape(served, mirror)
    assert _value(samples, "mirror_update_in_progress") == 0
    assert _value(samples, "mirror_update_failed") == 1

    # the last thing an install says, then the restart: not under way any more
    write_status(data, UpdateStatus("rebooting", "rebooting into B", 100, "", booted_at() - 60))
    samples = scrape(served, mirror)
    assert _value(samples, "mirror_update_in_progress") == 0
    assert _value(samples, "mirror_update_failed") == 0


def test_the_slots_come_from_rauc_at_most_once_a_minute_and_never_hold_a_scrape(
    served: WebServer, mirror: Mirror, data: Path, rauc: Path
) -> None:
    hold = rauc / "rauc-hold"
    hold.touch()  # RAUC does not answer
    try:
        started = time.monotonic()
        samples = scrape(served, mirror)  # answered while RAUC hangs: no slots yet
        assert "mirror_slot_info" not in samples
        assert _value(samples, "mirror_update_in_progress") == 0
        assert wait_for(lambda: len(rauc_calls(rauc)) == 1, 30.0)  # asked beside the scrape
        assert "mirror_slot_info" not in scrape(served, mirror)
    finally:
        hold.unlink()
    assert wait_for(lambda: "mirror_slot_info" in scrape(served, mirror), 30.0, poll_s=0.2)
    for _ in range(5):
        samples = scrape(served, mirror)
    elapsed = time.monotonic() - started
    assert len(rauc_calls(rauc)) <= 1 + int(elapsed // MINUTE_S)  # not once per scrape
    slots = {s.labels["slot"]: s for s in samples["mirror_slot_info"]}
    assert slots["A"].labels == {
        "slot": "A",
        "version": "1.4.0",
        "state": "booted",
        "boot_good": "true",
    }
    assert slots["B"].labels == {
        "slot": "B",
        "version": "",
        "state": "inactive",
        "boot_good": "false",
    }
    assert all(s.value == 1 for s in slots.values())
