"""The identity library: staff-uploaded source photos under ``<data dir>/identities``.

Each identity is ``<name>.jpg`` (the photo, re-encoded: no metadata) and
``<name>.preview.jpg`` (it swapped onto the demo face). Names are checked
strictly (letters, digits, space, ``_`` and ``-``; no dots, no slashes), so a
name can never reach outside the folder. Writes are atomic; nothing of a
visitor is ever stored here.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from pathlib import Path

from appliance.errors import IdentityNameError, IdentityNotFoundError, OutputError
from appliance.fileio import atomic_write_bytes

logger = logging.getLogger(__name__)

NAME_PATTERN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9 _-]{0,38}[A-Za-z0-9_-])?")
NAME_RULE = "1-40 letters, digits, spaces, _ or -, starting with a letter or digit"
PHOTO_SUFFIX = ".jpg"
PREVIEW_SUFFIX = ".preview.jpg"
FILE_MODE = 0o600


def check_name(name: str) -> str:
    """``name`` when it is a valid identity name; ``IdentityNameError`` otherwise."""
    if not isinstance(name, str) or NAME_PATTERN.fullmatch(name) is None:
        shown = repr(name)[:50] if isinstance(name, str) else type(name).__name__
        raise IdentityNameError(f"identity name {shown} is not allowed: use {NAME_RULE}")
    return name


class IdentityLibrary:
    """Photos and previews of named identities in one folder."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        """Every stored identity, sorted without regard to case."""
        if not self.root.is_dir():
            return []
        found = []
        for path in self.root.glob(f"*{PHOTO_SUFFIX}"):
            stem = path.name[: -len(PHOTO_SUFFIX)]
            if NAME_PATTERN.fullmatch(stem) and path.is_file():
                found.append(stem)
        return sorted(found, key=str.casefold)

    def exists(self, name: str) -> bool:
        return NAME_PATTERN.fullmatch(name) is not None and self._photo(name).is_file()

    def photo_path(self, name: str) -> Path:
        """The stored photo of ``name``; ``IdentityNotFoundError`` when there is none."""
        path = self._photo(check_name(name))
        if not path.is_file():
            raise IdentityNotFoundError(f"there is no identity called {name!r}")
        return path

    def photo(self, name: str) -> bytes:
        return self._read(self.photo_path(name))

    def preview(self, name: str) -> bytes | None:
        """Its preview JPEG, or None when it has none."""
        self.photo_path(name)
        path = self._preview(name)
        return self._read(path) if path.is_file() else None

    def add(self, name: str, photo_jpeg: bytes, preview_jpeg: bytes | None) -> None:
        """Store a new identity; a taken name (in any case) is refused."""
        check_name(name)
        with self._lock:
            self.check_free(name)
            atomic_write_bytes(self._photo(name), photo_jpeg, FILE_MODE)
            try:
                if preview_jpeg is not None:
                    atomic_write_bytes(self._preview(name), preview_jpeg, FILE_MODE)
            except OutputError:
                self._remove(name)
                raise
        logger.info("identity %r added", name)

    def rename(self, old: str, new: str) -> None:
        check_name(new)
        with self._lock:
            source = self.photo_path(old)
            if new == old:
                return
            if new.casefold() != old.casefold():
                self.check_free(new)
            try:
                os.replace(source, self._photo(new))
                if self._preview(old).is_file():
                    os.replace(self._preview(old), self._preview(new))
            except OSError as exc:
                raise OutputError(f"cannot rename {old!r}: {exc.strerror or exc}") from exc
        logger.info("identity %r renamed to %r", old, new)

    def delete(self, name: str) -> None:
        with self._lock:
            self.photo_path(name)
            self._remove(name)
        logger.info("identity %r deleted", name)

    def check_free(self, name: str) -> None:
        taken = {n.casefold(): n for n in self.names()}
        if name.casefold() in taken:
            raise IdentityNameError(
                f"there is already an identity called {taken[name.casefold()]!r}: "
                "pick another name or delete that one first"
            )

    def _remove(self, name: str) -> None:
        for path in (self._photo(name), self._preview(name)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def _photo(self, name: str) -> Path:
        return self.root / f"{name}{PHOTO_SUFFIX}"

    def _preview(self, name: str) -> Path:
        return self.root / f"{name}{PREVIEW_SUFFIX}"

    @staticmethod
    def _read(path: Path) -> bytes:
        try:
            return path.read_bytes()
        except OSError as exc:
            raise IdentityNotFoundError(f"cannot read {path.name}: {exc.strerror or exc}") from exc
