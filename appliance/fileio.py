"""Atomic file writes: a reader sees the old file or the new one, never half."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from appliance.errors import OutputError

logger = logging.getLogger(__name__)

PRIVATE_MODE = 0o600


def atomic_write_bytes(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def atomic_write_text(path: Path, text: str, mode: int = 0o644) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def keep_private(path: Path, what: str) -> None:
    """Make the secret file ``path`` (``what`` names it in the warning) 0600 again when
    others may read it."""
    if path.stat().st_mode & 0o077:
        logger.warning("%s %s was readable by others; now 0600", what, path)
        os.chmod(path, PRIVATE_MODE)


_CHUNK = 1 << 20


def copy_verified(
    source: Path,
    target: Path,
    check: Callable[[str], None],
    mode: int = 0o644,
    on_bytes: Callable[[int], None] | None = None,
) -> None:
    """Copy ``source`` to ``target`` atomically, hashing it on the way.

    ``check`` gets the copy's sha256 before the copy takes ``target``'s place:
    it raises to refuse it, and then ``target`` is left as it was.
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
            while chunk := src.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
                if on_bytes is not None:
                    on_bytes(len(chunk))
            out.flush()
            os.fsync(out.fileno())
        check(digest.hexdigest())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file (after resolving links, or one inode)."""
    a, b = Path(a).expanduser(), Path(b).expanduser()
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def refuse_same_file(output: Path, *inputs: Path) -> None:
    """Raise ``OutputError`` when ``output`` is one of ``inputs``: it would destroy it."""
    for source in inputs:
        if same_file(output, source):
            raise OutputError(
                f"cannot write {output}: it is the input {source}; choose another output file"
            )


def temp_beside(path: Path) -> Path:
    """A new empty temporary file in ``path``'s folder, with ``path``'s suffix.

    Written there and renamed over ``path`` once complete, an output is never
    seen half-written, and a failure leaves the old ``path`` as it was.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    os.close(fd)
    return Path(name)


def publish(tmp: Path, path: Path, mode: int = 0o644) -> None:
    """Flush ``tmp`` to the disk and rename it over ``path``; ``tmp`` is removed on failure."""
    try:
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        discard(tmp)
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def discard(tmp: Path) -> None:
    """Remove a temporary file, if it is still there."""
    with contextlib.suppress(OSError):
        os.unlink(tmp)
