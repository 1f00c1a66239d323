"""An update bundle uploaded in slices, so the request body limit stays a photo's (issue 35).

waitress refuses any request body bigger than a photo (``web_ui.server``), so the page
sends a bundle of up to ``MAX_BUNDLE_BYTES`` in slices of at most ``SLICE_BYTES``:
:meth:`BundleUploads.start` checks the name, the size and the room on the data partition
and opens ``incoming/.NAME.partial``; each slice must begin where the last one ended and
is written at its offset; :meth:`BundleUploads.finish` renames the whole file to
``incoming/NAME`` and leaves the request for the root-run installer
(:func:`appliance.updates.queue.request_install`). One upload at a time: another is
refused while one is under way, unless that one has sent nothing for ``STALE_S`` (a
closed browser). A cancelled upload's partial file is removed, and so is every partial
file when the app starts. Nothing here trusts the bundle: RAUC checks its signature on
the root side before installing it.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import os
import re
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

from appliance.errors import InputError, OutputError
from appliance.updates.queue import UpdateRequest, incoming_dir, read_status, request_install
from appliance.updates.recent import under_way
from web_ui.errors import BundleTooLargeError, BundleUploadError, NoRoomError, UploadConflictError

logger = logging.getLogger(__name__)

MAX_BUNDLE_BYTES = 2 * 2**30
MAX_BUNDLE_TEXT = "2 GB"
SLICE_BYTES = 4 * 2**20  # well inside the request body limit (a photo and its form)
ROOM_LEFT_BYTES = 64 * 2**20  # kept free on the data partition besides the bundle
STALE_S = 30 * 60.0  # a slice on poor Wi-Fi may take minutes; a closed browser sends none
NAME_RULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,93}\.raucb")
PARTIAL_GLOB = ".*.raucb.partial"


@dataclasses.dataclass(frozen=True)
class Upload:
    """One upload under way."""

    id: str  # random: the page's handle on it
    name: str  # NAME.raucb, checked
    total: int  # bytes announced at the start
    user: str
    received: int = 0
    touched: float = 0.0  # monotonic seconds of the last slice (or the start)


def check_name(name: str) -> str:
    if not NAME_RULE.fullmatch(name):
        raise BundleUploadError(
            f"{name[:100]!r} is not a bundle name: it must end in .raucb and use only "
            "letters, digits, '.', '_' and '-' (at most 100 characters)"
        )
    return name


def megabytes(size: int) -> str:
    return f"{size / 2**20:.1f} MB"


class BundleUploads:
    """The upload under way (at most one) into ``incoming/`` of ``data_dir``; thread-safe."""

    def __init__(
        self,
        data_dir: Path,
        *,
        stale_s: float = STALE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.data_dir = data_dir
        self.stale_s = stale_s
        self._clock = clock
        self._lock = threading.Lock()
        self._current: Upload | None = None

    @property
    def folder(self) -> Path:
        return incoming_dir(self.data_dir)

    def partial_path(self, name: str) -> Path:
        return self.folder / f".{name}.partial"

    def under_way(self) -> Upload | None:
        with self._lock:
            return self._current

    def clear(self) -> int:
        """Remove every partial file (at the start: no upload survives a restart)."""
        removed = 0
        with self._lock:
            self._current = None
            for path in self.folder.glob(PARTIAL_GLOB) if self.folder.is_dir() else ():
                path.unlink(missing_ok=True)
                removed += 1
        if removed:
            logger.info("removed %s unfinished bundle upload(s) from %s", removed, self.folder)
        return removed

    def start(self, name: str, total: int, user: str) -> Upload:
        check_name(name)
        if total <= 0:
            raise BundleUploadError("the bundle is empty")
        if total > MAX_BUNDLE_BYTES:
            raise BundleTooLargeError(
                f"{name} is {megabytes(total)}: a bundle may be at most {MAX_BUNDLE_TEXT}"
            )
        not_updating(self.data_dir)
        with self._lock:
            self._make_way()
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                self._check_room(name, total)
                with self.partial_path(name).open("wb"):
                    pass
            except OSError as exc:
                raise OutputError(f"cannot store an upload in {self.folder}: {exc}") from exc
            upload = Upload(secrets.token_urlsafe(16), name, total, user, 0, self._clock())
            self._current = upload
        logger.info("upload of %s (%s) by %s started", name, megabytes(total), user)
        return upload

    def append(self, upload_id: str, offset: int, data: bytes) -> Upload:
        """Write ``data`` at ``offset``, which must be where the last slice ended."""
        with self._lock:
            upload = self._mine(upload_id)
            if not data:
                raise BundleUploadError("a slice came without any data")
            if len(data) > SLICE_BYTES:
                raise BundleTooLargeError(
                    f"a slice may be at most {SLICE_BYTES} bytes, this one has {len(data)}"
                )
            if offset != upload.received:
                raise UploadConflictError(
                    f"a slice at byte {offset} does not follow the {upload.received} bytes "
                    f"received of {upload.name}: slices go in order, each where the last ended"
                )
            if offset + len(data) > upload.total:
                raise BundleTooLargeError(
                    f"{upload.name} is longer than the {upload.total} bytes announced"
                )
            self._write(upload, offset, data)
            upload = dataclasses.replace(upload, received=offset + len(data), touched=self._clock())
            self._current = upload
            return upload

    def finish(self, upload_id: str) -> UpdateRequest:
        """The whole bundle renamed to ``incoming/NAME`` and its install requested."""
        with self._lock:
            upload = self._mine(upload_id)
            if upload.received != upload.total:
                raise BundleUploadError(
                    f"{upload.name} has {upload.received} of its {upload.total} bytes: "
                    "send the rest first"
                )
            partial, bundle = self.partial_path(upload.name), self.folder / upload.name
            try:
                with partial.open("rb+") as done:
                    os.fsync(done.fileno())
                os.replace(partial, bundle)
            except OSError as exc:
                self._drop(upload)
                raise OutputError(f"cannot keep {upload.name}: {exc}") from exc
            self._current = None
            try:
                return request_install(self.data_dir, str(bundle), upload.user)
            except InputError as exc:  # an update began meanwhile: this one is not kept
                bundle.unlink(missing_ok=True)
                raise UploadConflictError(f"{exc}; the upload was not kept") from exc
            except OSError as exc:
                bundle.unlink(missing_ok=True)
                raise OutputError(f"cannot leave the install request: {exc}") from exc

    def abort(self, upload_id: str | None = None) -> Upload | None:
        """Cancel the upload ``upload_id`` (None: the one under way, whichever it is)."""
        with self._lock:
            upload = self._current if upload_id is None else self._mine(upload_id)
            if upload is not None:
                self._drop(upload)
            return upload

    def _mine(self, upload_id: str) -> Upload:
        upload = self._current
        if upload is None or not secrets.compare_digest(upload.id, upload_id):
            raise UploadConflictError(
                "this upload is no longer under way (cancelled, or the mirror restarted): "
                "start it again"
            )
        return upload

    def _make_way(self) -> None:
        upload = self._current
        if upload is None:
            return
        if self._clock() - upload.touched < self.stale_s:
            raise UploadConflictError(
                f"another upload is under way ({upload.name} by {upload.user}, "
                f"{megabytes(upload.received)} of {megabytes(upload.total)}): wait for it "
                "to end, or reload this page and cancel it"
            )
        logger.info("upload of %s by %s dropped: nothing came for long", upload.name, upload.user)
        self._drop(upload)

    def _check_room(self, name: str, total: int) -> None:
        free = shutil.disk_usage(self.folder).free
        if total + ROOM_LEFT_BYTES > free:
            raise NoRoomError(
                f"the data partition has {megabytes(free)} free: {name} needs "
                f"{megabytes(total)} and {megabytes(ROOM_LEFT_BYTES)} must stay free; "
                "make room and try again"
            )

    def _write(self, upload: Upload, offset: int, data: bytes) -> None:
        try:
            with self.partial_path(upload.name).open("rb+") as out:
                out.seek(offset)
                out.write(data)
        except OSError as exc:
            self._drop(upload)
            full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
            raise (NoRoomError if full else OutputError)(
                f"cannot write {upload.name}: {exc.strerror or exc}; the upload was cancelled"
            ) from exc

    def _drop(self, upload: Upload) -> None:
        self.partial_path(upload.name).unlink(missing_ok=True)
        self._current = None


def not_updating(data_dir: Path) -> None:
    """Refuse while an update is under way (an upload would be refused at its end)."""
    status = read_status(data_dir)
    if under_way(status):
        assert status is not None
        raise UploadConflictError(
            f"an update is already under way ({status.state}: {status.message}): "
            "wait until it has ended"
        )
