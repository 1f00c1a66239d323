"""The swapping switch with a data folder that cannot be written (read-only, or full).

Through a real waitress server on loopback: turning swapping off takes effect
at once although it cannot be saved, and the page says it was not saved (no
500); turning it on is refused then, with the reason, and nothing changes; the
settings page's off switch works the same way while its other changes wait.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_web_support import PASSWORD, Mirror, build_app, build_mirror
from tests.web_client import Staff, changed
from web_ui.server import WebServer, serve


@contextlib.contextmanager
def read_only(*folders: Path) -> Iterator[None]:
    """``folders`` made unwritable (root: the immutable flag, as permissions do not stop it),
    or a skip where this machine cannot do that."""
    undo: list[list[str]] = []
    modes = {folder: folder.stat().st_mode & 0o7777 for folder in folders}
    try:
        for folder in folders:
            if os.geteuid() == 0:
                made = subprocess.run(
                    ["chattr", "+i", str(folder)], capture_output=True, check=False
                )
                if made.returncode != 0:
                    pytest.skip(f"cannot make {folder} read-only here: {made.stderr!r}")
                undo.append(["chattr", "-i", str(folder)])
            else:
                folder.chmod(0o555)
            probe = folder / ".probe"
            try:
                probe.touch()
            except OSError:
                continue
            probe.unlink()
            pytest.skip(f"{folder} is still writable")
        yield
    finally:
        for command in undo:
            subprocess.run(command, check=False)
        for folder, mode in modes.items():
            folder.chmod(mode)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Mirror, WebServer, Staff]]:
    mirror = build_mirror(tmp_path)
    mirror.control.set_swapping(False)
    mirror.control.set_swapping(True)  # the state file exists, saying on
    server = serve(build_app(mirror), "127.0.0.1", 0)
    staff = Staff(server.url)
    staff.login(PASSWORD)  # before the folder turns read-only
    try:
        yield mirror, server, staff
    finally:
        server.stop()
        mirror.control.close()


def _switch(staff: Staff, enabled: str) -> tuple[int, str]:
    return staff.post("/swapping", changed(staff.form("/", "/swapping"), enabled=enabled))


def _swaps(mirror: Mirror) -> bool:
    """Whether the processor swaps faces now (an identity swapped in)."""
    return mirror.processor.identity is not None


def _api_swapping(staff: Staff) -> bool:
    status, body = staff.get("/api/status")
    assert status == 200
    return bool(json.loads(body)["swapping"])


def test_off_works_and_says_it_was_not_saved_on_a_read_only_data_folder(
    served: tuple[Mirror, WebServer, Staff],
) -> None:
    mirror, _, staff = served
    state = mirror.web_dir / "state.json"
    before = state.read_bytes()
    with read_only(mirror.base, mirror.web_dir):
        status, html = _switch(staff, "false")
        assert status == 200, html[:2000]
        assert "Swapping is off, but this could not be saved" in html
        assert not _swaps(mirror)  # swapping stopped, between frames
        assert not mirror.control.swapping_enabled and not _api_swapping(staff)

        status, html = _switch(staff, "true")  # on: refused while it cannot be saved
        assert status == 200 and "Swapping was not turned on: cannot write" in html
        assert not _swaps(mirror) and not _api_swapping(staff)
    assert state.read_bytes() == before  # nothing half-written

    status, html = _switch(staff, "true")  # writable again: on works and is saved
    assert status == 200 and "Swapping is on." in html
    assert _swaps(mirror)
    assert json.loads(state.read_text())["swapping"] is True


def test_the_settings_page_off_switch_works_unsaved_and_its_other_changes_wait(
    served: tuple[Mirror, WebServer, Staff],
) -> None:
    mirror, _, staff = served
    config = mirror.settings_path.read_bytes()
    page = changed(staff.form("/settings"), swapping="false", label__text="Changed label")
    with read_only(mirror.base, mirror.web_dir):
        status, html = staff.post("/settings", page)
    assert status == 400, html[:2000]
    assert "cannot write" in html and "Swapping is off all the same" in html
    assert not _swaps(mirror) and not mirror.control.swapping_enabled
    assert mirror.control.settings().label.text == "AI-generated"  # not saved: not applied
    assert mirror.settings_path.read_bytes() == config
