"""One install at a time: ``mirror provision`` holds a lock while it plans and installs,
so a second run into the same root (a USB stick plugged in twice, an installer's script
run again) is refused, once its bundle is checked, instead of building, switching and
pruning venvs under the first.

The lock is an advisory ``flock`` on the root directory itself (``/`` on the device, the
``--root`` folder for a mounted card; the nearest folder above it while it does not exist
yet): taking it writes nothing, so an install refused for any reason leaves the root as
it was. The kernel drops the lock
however the holder ends (``kill -9`` included).
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import PurePosixPath

from provisioning.errors import ProvisionError
from provisioning.layout import Layout

logger = logging.getLogger(__name__)


@contextmanager
def install_lock(layout: Layout) -> Iterator[None]:
    """Hold the install lock of ``layout``'s root; a ``ProvisionError`` when another install
    holds it."""
    root = layout.host(PurePosixPath("/"))
    held = next(p for p in (root, *root.parents) if p.is_dir())
    fd = os.open(held, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ProvisionError(
                f"another `mirror provision` is installing into {root} now: let it finish, "
                "then run this again"
            ) from None
        yield
    finally:
        os.close(fd)
