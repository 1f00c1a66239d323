"""Locks on the hidden working files of writers, so that abandoned ones can be told apart.

A writer that works in a hidden file or folder beside its target (a temporary video, a
recording's segments) holds an exclusive ``flock`` on it while it works (:func:`hold`).
The kernel drops the lock when the process ends, however it ends (``kill -9`` and power
loss included), so a working file whose lock can be taken (:func:`abandoned`) belongs to
a writer that was interrupted: the next writer of the same target may clean it up or
recover it, and never touches one that is still in use.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)


def hold(path: Path) -> int:
    """Lock ``path`` (a file or a folder) for this process; the descriptor that holds it.

    Raises ``OSError`` when it cannot be opened or another process holds it.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise
    return fd


def release(fd: int | None) -> None:
    """Let go of a lock :func:`hold` took (closing its descriptor); None does nothing."""
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def abandoned(path: Path) -> bool:
    """Whether nobody holds ``path``'s lock: its writer ended without finishing."""
    try:
        fd = hold(path)
    except OSError:
        return False
    release(fd)
    return True
