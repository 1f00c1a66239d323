"""The pixels of a face's box, shared with a swap helper process (``swap_helper``).

The box went over the helper's socket both ways, pickled: copied into the
message and out of it on each side, the reply unpickled on the process
thread. Here the box lives in memory both processes map: an anonymous file
(``memfd_create``, Linux) handed to the helper when it starts. The main
process writes the box and sends a few numbers; the helper swaps it in place
and replies a few numbers. The file grows (in whole MiB) when a box needs
more; the helper maps it again when it sees it larger.
"""

from __future__ import annotations

import logging
import mmap
import os

import numpy as np

from appliance.errors import MirrorError
from appliance.media.frames import Image

logger = logging.getLogger(__name__)

GROW_STEP = 1 << 20  # the file grows in whole MiB


class SharedBoxError(MirrorError, OSError):
    """The shared box could not be made or mapped (no ``memfd_create``, no memory)."""


class SharedBox:
    """A box of pixels in an anonymous file; ``create`` makes it, ``attach`` maps the
    file another process made. Only the creating side makes it larger."""

    def __init__(self, fd: int, owner: bool) -> None:
        self.fd = fd
        self._owner = owner
        self._map: mmap.mmap | None = None

    @classmethod
    def create(cls, name: str) -> SharedBox:
        """A new, empty box (its fd closes on exec: ``subprocess``'s ``pass_fds`` hands it
        to the helper, and no other child gets it)."""
        try:
            fd = os.memfd_create(name)
        except (AttributeError, OSError) as exc:  # not Linux, or no memory
            raise SharedBoxError(f"no shared memory for the swap helper: {exc}") from exc
        return cls(fd, owner=True)

    @classmethod
    def attach(cls, fd: int) -> SharedBox:
        """The box whose file another process created and handed over as ``fd``."""
        return cls(fd, owner=False)

    def view(self, shape: tuple[int, ...]) -> Image:
        """The first bytes of the file as a uint8 array of ``shape`` (the box's pixels);
        the file grows first (creating side) or is mapped again (the other) as needed."""
        needed = int(np.prod(shape))
        if self._map is None or len(self._map) < needed:
            self._map = self._mapping(needed)
        return np.frombuffer(self._map, np.uint8, needed).reshape(shape)

    def close(self) -> None:
        """Close the file, once (views already taken keep their mapping until dropped)."""
        self._map = None
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def _mapping(self, needed: int) -> mmap.mmap:
        size = os.fstat(self.fd).st_size
        if size < needed:
            if not self._owner:
                raise SharedBoxError(f"the shared box has {size} bytes, a job needs {needed}")
            size = -(-needed // GROW_STEP) * GROW_STEP
            os.ftruncate(self.fd, size)
            logger.debug("shared box grown to %d bytes", size)
        return mmap.mmap(self.fd, size)
