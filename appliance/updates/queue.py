"""The update queue: the admin page asks, a root-run installer does, both read the progress.

The web app runs as the ``mirror`` user and cannot install: it leaves a bundle in
``DATA_DIR/updates/incoming/`` (or a URL) and ``request.json`` beside it.
``mirror-update.path`` sees the request and starts ``mirror-update.service`` (root),
which takes it (:func:`take_request`), installs through RAUC and writes its progress to
``status.json``: the admin page, the HDMI screen and ``mirror doctor`` read it. A USB
stick's installer writes the same file. Each file is replaced whole (atomic).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from appliance.errors import InputError
from appliance.fileio import atomic_write_text

logger = logging.getLogger(__name__)

REQUEST_NAME = "request.json"
STATUS_NAME = "status.json"
INCOMING_NAME = "incoming"
STATES = ("checking", "downloading", "installing", "rebooting", "failed", "done")
BUSY = ("checking", "downloading", "installing", "rebooting")
PERCENT = re.compile(r"^\s*(\d{1,3})%\s")


@dataclass(frozen=True)
class UpdateRequest:
    source: str  # a file under incoming/, or an http(s):// URL
    requested_by: str
    at: float


@dataclass(frozen=True)
class UpdateStatus:
    state: str  # one of STATES
    message: str  # the last thing said, for people
    percent: int | None = None
    source: str = ""
    at: float = 0.0

    @property
    def busy(self) -> bool:
        return self.state in BUSY


def updates_dir(data_dir: Path) -> Path:
    return data_dir / "updates"


def ensure_folder(data_dir: Path) -> Path:
    """``updates/``, made with the data folder's owner: the root-run installer may be the
    first to write there, and the web app (the ``mirror`` user) must still write there."""
    folder = updates_dir(data_dir)
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            owner = data_dir.stat()
            os.chown(folder, owner.st_uid, owner.st_gid)
    return folder


def incoming_dir(data_dir: Path) -> Path:
    return updates_dir(data_dir) / INCOMING_NAME


def request_install(data_dir: Path, source: str, requested_by: str) -> UpdateRequest:
    """Leave a request for the installer; an :class:`InputError` while one is under way or
    for a source that is neither a file in ``incoming/`` nor an http(s) URL."""
    from appliance.updates.recent import under_way  # (recent reads this module's status)

    status = read_status(data_dir)
    if under_way(status):
        assert status is not None
        raise InputError(f"an update is already under way ({status.state}: {status.message})")
    checked_source(data_dir, source)
    request = UpdateRequest(source, requested_by, time.time())
    folder = ensure_folder(data_dir)
    atomic_write_text(folder / REQUEST_NAME, json.dumps(asdict(request)) + "\n")
    return request


def checked_source(data_dir: Path, source: str) -> str:
    if source.startswith(("http://", "https://")):
        return source
    incoming = incoming_dir(data_dir).resolve()
    path = Path(source).resolve()
    if path.parent != incoming or path.suffix != ".raucb":
        raise InputError(f"{source}: an update comes as a .raucb in {incoming} or by URL")
    return str(path)


def take_request(data_dir: Path) -> UpdateRequest | None:
    """The waiting request, removed from the queue; None when there is none (or it is
    unreadable: logged and removed)."""
    path = updates_dir(data_dir) / REQUEST_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    finally:
        path.unlink(missing_ok=True)
    try:
        data = json.loads(text)
        request = UpdateRequest(str(data["source"]), str(data["requested_by"]), float(data["at"]))
        checked_source(data_dir, request.source)
    except (ValueError, KeyError, TypeError, InputError) as exc:
        logger.warning("update request dropped: %s", exc)
        return None
    return request


def write_status(data_dir: Path, status: UpdateStatus) -> None:
    folder = ensure_folder(data_dir)
    atomic_write_text(folder / STATUS_NAME, json.dumps(asdict(status)) + "\n")


def read_status(data_dir: Path) -> UpdateStatus | None:
    try:
        data = json.loads((updates_dir(data_dir) / STATUS_NAME).read_text(encoding="utf-8"))
        percent = data.get("percent")
        return UpdateStatus(
            state=str(data["state"]),
            message=str(data["message"]),
            percent=int(percent) if percent is not None else None,
            source=str(data.get("source", "")),
            at=float(data.get("at", 0.0)),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("update status unreadable: %s", exc)
        return None


class StatusWriter:
    """A ``say`` for the installer that also keeps ``status.json`` up to date: a line that
    starts with a percentage moves the percentage."""

    def __init__(
        self,
        data_dir: Path,
        source: str,
        state: str = "checking",
        echo: Callable[[str], None] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.source = source
        self.echo = echo  # where people read it too (the journal, the console)
        self.state = state
        self.percent: int | None = None

    def set_state(self, state: str, message: str) -> None:
        self.state = state
        self(message)

    def __call__(self, message: str) -> None:
        found = PERCENT.match(message)
        if found is not None:
            self.percent = int(found.group(1))
            self.state = "installing"
        status = UpdateStatus(self.state, message.strip(), self.percent, self.source, time.time())
        try:
            write_status(self.data_dir, status)
        except OSError as exc:
            logger.warning("cannot write the update status: %s", exc)
        logger.info("update: %s", message.strip())
        if self.echo is not None:
            self.echo(message.strip())
