"""The admin page's software update (issue 36), through a real waitress server on loopback.

A bundle bigger than the server's request body limit goes up in slices, as
``static/updates.js`` sends them, and lands whole in ``incoming/`` with the install
request beside it; bad names, slices out of order, sizes past the limits or the room
left, a second upload and a request while an update is under way are refused with a
message, leaving no request. An address becomes a request too; ``/updates/status``
says what the installer wrote. The slot table reads ``rauc status``: without RAUC the
page says how to update instead; ``tests.fake_rauc`` stands for a device's RAUC (this
machine has no A/B slots).
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from appliance.updates.queue import (
    UpdateStatus,
    incoming_dir,
    updates_dir,
    write_status,
)
from tests.fake_rauc import install_fake_rauc, path_with
from tests.test_cli_outputs import tiny_tmpfs
from tests.test_web_support import PASSWORD, Mirror, build_app, build_mirror
from tests.web_client import Staff, changed
from web_ui.bundle_upload import MAX_BUNDLE_BYTES, SLICE_BYTES
from web_ui.server import WebServer, max_body_bytes, serve

META_TOKEN = re.compile(r'<meta name="csrf-token" content="([^"]+)"')
FORM = "application/x-www-form-urlencoded"
SLICE = "application/octet-stream"
NAME = "mirror-1.5.0.raucb"
URL = "https://updates.example/mirror-1.5.0.raucb"


class UpdatePage:
    """A member of staff on the update page, sending what its script sends."""

    def __init__(self, server: WebServer) -> None:
        self.staff = Staff(server.url)
        self.staff.login(PASSWORD)
        status, html = self.staff.get("/updates")
        assert status == 200, html[:500]
        found = META_TOKEN.search(html)
        assert found is not None
        self.token = found.group(1)

    def call(self, path: str, body: bytes = b"", kind: str = SLICE) -> tuple[int, dict[str, str]]:
        headers = {"X-CSRF-Token": self.token, "Content-Type": kind, "Accept": "application/json"}
        status, text = self.staff.send(path, body, headers)
        return status, json.loads(text)

    def start(self, name: str, size: int | str) -> tuple[int, dict[str, str]]:
        fields = urllib.parse.urlencode({"name": name, "size": size}).encode()
        return self.call("/updates/uploads", fields, FORM)

    def started(self, name: str, size: int) -> dict[str, str]:
        status, upload = self.start(name, size)
        assert status == 201, upload
        return upload

    def slice(self, upload: dict[str, str], offset: int, data: bytes) -> tuple[int, dict[str, str]]:
        return self.call(f"{upload['append']}?offset={offset}", data)

    def upload(self, name: str, data: bytes) -> tuple[int, dict[str, str]]:
        upload = self.started(name, len(data))
        for offset in range(0, len(data), SLICE_BYTES):
            status, answer = self.slice(upload, offset, data[offset : offset + SLICE_BYTES])
            assert status == 200, answer
            assert answer["received"] == min(offset + SLICE_BYTES, len(data))
        return self.call(upload["finish"])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Mirror, WebServer]]:
    mirror = build_mirror(tmp_path)
    server = serve(build_app(mirror), "127.0.0.1", 0)
    try:
        yield mirror, server
    finally:
        server.stop()
        mirror.control.close()


def no_request(mirror: Mirror) -> bool:
    return not (updates_dir(mirror.base) / "request.json").exists()


def incoming(mirror: Mirror) -> list[str]:
    folder = incoming_dir(mirror.base)
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def bundle_bytes(size: int) -> bytes:
    return np.random.default_rng(36).integers(0, 256, size, dtype=np.uint8).tobytes()


def test_only_logged_in_staff_reach_the_update_page(served: tuple[Mirror, WebServer]) -> None:
    mirror, server = served
    visitor = Staff(server.url)
    for path in ("/updates", "/updates/status"):
        status, html = visitor.get(path)
        assert status == 200 and 'action="/login"' in html and '"state"' not in html, path
    status, html = visitor.get("/login")
    token = META_TOKEN.search(html)
    assert token is not None
    fields = urllib.parse.urlencode({"name": NAME, "size": 10}).encode()
    json_form = {"Content-Type": FORM, "Accept": "application/json"}
    status, text = visitor.send("/updates/uploads", fields, json_form)
    assert status == 400 and "This form has expired" in text
    status, text = visitor.send("/updates/uploads", fields, {**json_form, "X-CSRF-Token": token[1]})
    assert status == 401 and json.loads(text) == {"error": "log in first"}
    status, html = visitor.post("/updates/url", [("url", URL), ("csrf_token", token[1])])
    assert 'action="/login"' in html
    assert no_request(mirror) and incoming(mirror) == []
    staff = UpdatePage(server)
    status, html = staff.staff.get("/")
    assert 'href="/updates"' in html  # in the navigation of every page


def test_a_bundle_goes_up_in_slices_and_its_install_is_requested(
    served: tuple[Mirror, WebServer], caplog: pytest.LogCaptureFixture
) -> None:
    mirror, server = served
    data = bundle_bytes(2 * SLICE_BYTES + 3 * 2**20 + 12345)
    assert len(data) > max_body_bytes(server.app), "the bundle must not fit one request"
    page = UpdatePage(server)
    caplog.set_level(logging.INFO, logger="web_ui.audit")
    status, answer = page.upload(NAME, data)
    assert status == 200 and answer["message"].startswith(f"{NAME} uploaded"), answer
    bundle = incoming_dir(mirror.base) / NAME
    assert incoming(mirror) == [NAME] and bundle.read_bytes() == data
    request = json.loads((updates_dir(mirror.base) / "request.json").read_text())
    assert request["source"] == str(bundle.resolve()) and request["requested_by"] == "admin"
    said = [r.getMessage() for r in caplog.records if r.name == "web_ui.audit"]
    assert f"update bundle {NAME} uploaded by admin from 127.0.0.1" in said


def test_a_bad_bundle_name_is_refused(served: tuple[Mirror, WebServer]) -> None:
    mirror, server = served
    page = UpdatePage(server)
    names = ["../evil.raucb", "bundle.tar", "a b.raucb", ".hidden.raucb", "x/y.raucb",
             "bundle.raucb.sh", "é.raucb", "a" * 120 + ".raucb", ""]  # fmt: skip
    for name in names:
        status, answer = page.start(name, 1000)
        assert status == 400, (name, answer)
        assert "is not a bundle name: it must end in .raucb" in answer["error"], answer
    assert no_request(mirror) and incoming(mirror) == []


def test_slices_out_of_order_or_past_the_sizes_are_refused(
    served: tuple[Mirror, WebServer],
) -> None:
    mirror, server = served
    page = UpdatePage(server)
    status, answer = page.start(NAME, MAX_BUNDLE_BYTES + 1)
    assert status == 413 and "a bundle may be at most 2 GB" in answer["error"], answer
    status, answer = page.start(NAME, "lots")
    assert status == 400 and "size in bytes" in answer["error"]
    upload = page.started(NAME, 3 * 2**20)
    status, answer = page.slice(upload, 1000, b"x" * 1000)
    assert status == 409 and "does not follow the 0 bytes received" in answer["error"], answer
    assert page.slice(upload, 0, b"x" * 2**20)[0] == 200
    status, answer = page.slice(upload, 0, b"x" * 2**20)  # sent again
    assert status == 409 and "slices go in order" in answer["error"]
    status, answer = page.slice(upload, 2**20, b"x" * (SLICE_BYTES + 1))
    assert (
        status == 413
        and "slice may be at most 4194304 bytes, this one has 4194305" in answer["error"]
    )
    status, answer = page.slice(upload, 2**20, b"x" * (3 * 2**20))
    assert status == 413 and "longer than the 3145728 bytes announced" in answer["error"]
    status, answer = page.call(upload["finish"])
    assert status == 400 and "has 1048576 of its 3145728 bytes" in answer["error"]
    assert no_request(mirror) and incoming(mirror) == [f".{NAME}.partial"]
    status, answer = page.call(upload["abort"])
    assert status == 200 and incoming(mirror) == []
    status, answer = page.slice(upload, 2**20, b"x")
    assert status == 409 and "no longer under way" in answer["error"]
    assert no_request(mirror)


def test_a_bundle_without_room_on_the_data_partition_is_refused(tmp_path: Path) -> None:
    with tiny_tmpfs(tmp_path / "small", "16m") as base:
        mirror = build_mirror(base)
        server = serve(build_app(mirror), "127.0.0.1", 0)
        try:
            status, answer = UpdatePage(server).start(NAME, 32 * 2**20)
            assert status == 507, answer
            said = "The data partition has 16.0 MB free: mirror-1.5.0.raucb needs 32.0 MB"
            assert answer["error"].startswith(said), answer
            assert no_request(mirror) and incoming(mirror) == []
        finally:
            server.stop()
            mirror.control.close()


def test_one_upload_at_a_time_and_staff_can_cancel_it(served: tuple[Mirror, WebServer]) -> None:
    mirror, server = served
    alice, bob = UpdatePage(server), UpdatePage(server)
    upload = alice.started(NAME, 2 * 2**20)
    assert alice.slice(upload, 0, b"a" * 2**20)[0] == 200
    status, answer = bob.start("other.raucb", 1000)
    assert status == 409
    said = "Another upload is under way (mirror-1.5.0.raucb by admin, 1.0 MB of 2.0 MB)"
    assert answer["error"].startswith(said), answer
    status, html = bob.staff.get("/updates")
    assert "An upload is under way: mirror-1.5.0.raucb by admin" in html
    status, html = bob.staff.post("/updates/uploads/cancel", [("csrf_token", bob.token)])
    assert status == 200 and f"The upload of {NAME} was cancelled." in html
    assert incoming(mirror) == []
    status, answer = alice.slice(upload, 2**20, b"a" * 2**20)
    assert status == 409 and "no longer under way" in answer["error"]
    assert bob.started("other.raucb", 1000)
    assert incoming(mirror) == [".other.raucb.partial"]
    build_app(mirror)  # the mirror restarts: no upload survives it
    assert incoming(mirror) == [] and no_request(mirror)


def test_an_address_becomes_an_install_request(served: tuple[Mirror, WebServer]) -> None:
    mirror, server = served
    page = UpdatePage(server)
    form = page.staff.form("/updates", "/updates/url")
    for bad in ("ftp://updates.example/b.raucb", "updates.example/b.raucb", "https://",
                "https://updates.example/a b.raucb", "https://x/" + "a" * 2100):  # fmt: skip
        status, html = page.staff.post("/updates/url", changed(form, url=bad))
        assert status == 400 and "Give the bundle&#39;s address as http://" in html, bad
    assert no_request(mirror)
    status, html = page.staff.post("/updates/url", changed(form, url=URL))
    assert status == 200 and f"Install from {URL} requested" in html
    request = json.loads((updates_dir(mirror.base) / "request.json").read_text())
    assert request["source"] == URL and request["requested_by"] == "admin"


def test_the_status_route_says_what_the_installer_wrote(
    served: tuple[Mirror, WebServer],
) -> None:
    mirror, server = served
    page = UpdatePage(server)
    status, text = page.staff.get("/updates/status")
    assert status == 200 and json.loads(text)["state"] == "idle"
    stale = UpdateStatus("rebooting", "rebooting into it", None, "/x.raucb", 1234.5)
    write_status(mirror.base, stale)  # written before this boot: over, whatever it says
    status, text = page.staff.get("/updates/status")
    assert json.loads(text)["busy"] is False
    now = time.time()
    said = UpdateStatus("installing", "42% Copying image to rootfs.1", 42, "/x.raucb", now)
    write_status(mirror.base, said)
    status, text = page.staff.get("/updates/status")
    assert json.loads(text) == {"state": "installing", "message": said.message, "percent": 42,
                                "source": "/x.raucb", "at": now, "busy": True}  # fmt: skip
    status, html = page.staff.get("/updates")  # the page as it opens, before its script runs
    assert "42%" in html and said.message in html


def test_a_second_request_is_refused_while_an_update_is_under_way(
    served: tuple[Mirror, WebServer],
) -> None:
    mirror, server = served
    page = UpdatePage(server)
    upload = page.started(NAME, 1000)  # begun before the update
    assert page.slice(upload, 0, b"u" * 1000)[0] == 200
    write_status(
        mirror.base, UpdateStatus("downloading", "downloading b.raucb: 10%", None, at=time.time())
    )
    form = page.staff.form("/updates", "/updates/url")
    status, html = page.staff.post("/updates/url", changed(form, url=URL))
    assert status == 409 and "An update is already under way (downloading" in html
    status, answer = page.call(upload["finish"])
    assert status == 409 and "An update is already under way (downloading" in answer["error"]
    assert "the upload was not kept" in answer["error"]
    status, answer = page.start("other.raucb", 1000)
    assert status == 409 and "wait until it has ended" in answer["error"]
    assert no_request(mirror) and incoming(mirror) == []
    write_status(
        mirror.base, UpdateStatus("failed", "signature bad", None, at=time.time())
    )  # it has ended
    assert page.upload(NAME, b"again")[0] == 200 and not no_request(mirror)


def _rows(html: str) -> list[str]:
    body = html.split('<table class="slots">')[1].split("</table>", maxsplit=1)[0]
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)).strip()
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)[1:]]  # fmt: skip


def test_the_slots_come_from_rauc(
    served: tuple[Mirror, WebServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, server = served
    page = UpdatePage(server)
    with_rauc = path_with(install_fake_rauc(tmp_path / "rauc"))
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no RAUC here
    status, html = page.staff.get("/updates")
    assert status == 200 and '<table class="slots">' not in html
    assert "This mirror was installed without the A/B image: update it with " in html
    assert "<code>mirror provision --bundle</code>" in html
    # the device's RAUC, answering as it does on an A/B card booted from A
    monkeypatch.setenv("PATH", with_rauc)
    status, html = page.staff.get("/updates")
    assert "installed without the A/B image" not in html
    assert _rows(html) == [
        "A 1.4.0 2026-12-05 10:00:00 UTC good running boots next",
        "B as flashed – bad",
    ]
