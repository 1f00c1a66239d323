"""The A/B update's line on the HDMI screen, from the installer's ``status.json``.

The root-run installer (``appliance.updates.queue``) writes its progress there; the
screen says it while the update is under way, and for a while after it failed or
ended (``appliance.updates.recent``): "Updating: installing 42% — do not unplug".
The file is looked at (one ``stat``) at most once every ``every_s`` and read only when
it changed, so a mirror that asks on every tick costs next to nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from appliance.media.overlays import ScreenTexts
from appliance.updates.queue import STATUS_NAME, UpdateStatus, read_status, updates_dir
from appliance.updates.recent import booted_at, worth_showing

logger = logging.getLogger(__name__)

CHECK_EVERY_S = 1.0
MAX_MESSAGE_CHARS = 48  # the line stays short enough to read; the rest is in `mirror doctor`


def update_line(status: UpdateStatus, texts: ScreenTexts) -> str:
    """What the screen says of ``status``."""
    if status.state == "failed":
        return texts.update_failed.format(message=_short(status.message))
    if status.state == "done":
        return texts.update_done.format(message=_short(status.message))
    step = status.state if status.percent is None else f"{status.state} {status.percent}%"
    return texts.updating.format(step=step)


def _short(message: str) -> str:
    line = " ".join(message.split())
    return line if len(line) <= MAX_MESSAGE_CHARS else line[: MAX_MESSAGE_CHARS - 1] + "…"


class UpdateNote:
    """The update's line for the screen ("" when there is nothing to say)."""

    def __init__(
        self,
        data_dir: Path,
        every_s: float = CHECK_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.data_dir = data_dir
        self.path = updates_dir(data_dir) / STATUS_NAME
        self.every_s = every_s
        self.clock = clock
        self.boot_s = booted_at()
        self.reads = 0  # times the file was read (its stat changed)
        self._checked: float | None = None
        self._seen: tuple[int, int, int] | None = None
        self._status: UpdateStatus | None = None

    def line(self, texts: ScreenTexts) -> str:
        status = self.status()
        if not worth_showing(status, boot_s=self.boot_s):
            return ""
        assert status is not None  # worth showing
        return update_line(status, texts)

    def status(self) -> UpdateStatus | None:
        """The last status the file held, looked at no more than once every ``every_s``."""
        now = self.clock()
        if self._checked is not None and now - self._checked < self.every_s:
            return self._status
        self._checked = now
        try:
            stat = self.path.stat()
            seen: tuple[int, int, int] | None = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        except OSError:
            seen = None
        if seen != self._seen:
            self._seen = seen
            self._status = None
            if seen is not None:
                self.reads += 1
                self._status = read_status(self.data_dir)
        return self._status
