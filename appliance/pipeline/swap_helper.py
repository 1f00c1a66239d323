"""Helper processes for the swaps of a frame's second and further faces.

The geometric swap is many small NumPy and OpenCV calls, and Python holds its
lock (the GIL) between them: on the 2-core development machine two faces of a
tiled 640x480 frame took 13.9 ms swapped one after the other and 13.8 ms on
two threads (1280x720: 16.1 and 13.9). Threads do help the landmark models,
which run without the lock, but not the swap.

So each face after the first can go to a helper process of its own
(``FrameProcessor``): the part of the frame the swap reads and writes (the
face's box) is written to memory the two processes share (``shared_box``),
and the face's landmarks, target mesh and eased colour memory go over a
socket; the helper swaps the box in place and sends the memory back, and the
pixels the swap changed are copied into the frame. The identity goes once,
and again when it changes. The process thread sends every helper its face,
swaps the first face itself, then takes the replies.

A helper is a fresh interpreter running this module (not ``fork``: the
runtimes' own threads make it unsafe; not ``multiprocessing``'s ``spawn``,
which runs the caller's main script again), started the first time a frame
has that many faces and used once it says it is ready (importing OpenCV
takes about a second). Until then, and for good if it fails (it dies, hangs
past ``REPLY_TIMEOUT_S`` or cannot take the work), its faces are swapped in
the process as before, with a warning in the log (the processor starts a new
helper a minute later). A face it could not swap for a reason of that face
alone (an error in the swap) is swapped in the process, and the helper kept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import weakref
from multiprocessing.connection import Connection
from pathlib import Path
from typing import cast

import cv2
import numpy as np

from appliance.config import SwapSettings
from appliance.media.frames import Image
from appliance.pipeline.shared_box import SharedBox
from appliance.vision.blend import ColourMemory
from appliance.vision.identity import Identity
from appliance.vision.swap_geometric import GeometricSwapper, swap_region
from appliance.vision.types import FaceLandmarks, FloatArray

logger = logging.getLogger(__name__)

_SUM_CHANNELS = np.ones((1, 3), np.float32)
REPLY_TIMEOUT_S = 2.0  # a swap takes milliseconds; this long means the helper is stuck
STOP_TIMEOUT_S = 2.0
_READY = "ready"

# what a swap returns: whether it changed the frame, its stage timings and the
# face's colour memory after it
Swapped = tuple[bool, dict[str, float], ColourMemory]
# a helper's reply to a job: that (the swapped box is in the shared box), or a line saying
# why it failed
Reply = Swapped


@dataclasses.dataclass(frozen=True)
class Sent:
    """A swap under way: its job's number, the frame's region (x0, y0, x1, y1) and a
    copy of its pixels as sent; None for a face with nothing to swap."""

    number: int
    region: tuple[int, int, int, int] | None
    box: Image | None


@dataclasses.dataclass(frozen=True)
class SwapJob:
    """One face's swap, in the coordinates of its box (``swap_region``), whose pixels
    are in the shared box; its reply carries its ``number``."""

    number: int
    settings: SwapSettings
    shape: tuple[int, int, int]  # the box's (the shared box's first bytes)
    face: FaceLandmarks
    strength: float
    target: FloatArray | None
    colour: ColourMemory
    own_eyes: tuple[float, float]


def changed_pixels(before: Image, after: Image) -> Image:
    """Nonzero where any channel of ``after`` differs from ``before`` (both HxWx3 uint8):
    the channels' absolute differences summed, saturating. (NumPy's
    ``np.any(after != before, axis=2)`` and a boolean-indexed copy took 2.1 ms on the
    processing thread for a 220x190 box, against 0.1 ms for this and ``cv2.copyTo``.)"""
    return np.asarray(cv2.transform(cv2.absdiff(before, after), _SUM_CHANNELS), np.uint8)


class SwapHelper:
    """One helper process; one swap at a time, sent and received by one thread."""

    def __init__(self) -> None:
        self._ready = False
        self.failed = False
        self.failed_at = 0.0  # time.monotonic() when it failed
        self.swaps = 0  # faces it has swapped
        self._identity: Identity | None = None  # the one the helper has
        self._jobs = 0  # jobs sent: a reply names its job, a stale one is dropped
        self._pending: int | None = None  # the job sent and not yet received
        ours, theirs = socket.socketpair()
        self._conn = Connection(ours.detach())
        # this very package, wherever it was imported from (a wheel, a source checkout)
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (package_root, env.get("PYTHONPATH"))))
        fd = theirs.fileno()
        why = ""
        self._box: SharedBox | None = None
        self._process: subprocess.Popen[bytes] | None = None
        try:
            self._box = SharedBox.create("face-mirror-swap")
            shared = self._box.fd
            self._process = subprocess.Popen(
                [sys.executable, "-c", _ENTRY, str(fd), str(shared)],
                pass_fds=(fd, shared),
                env=env,
                close_fds=True,
            )
        except (OSError, ValueError) as exc:  # no interpreter (an embedded Python), no memfd
            why = f"it could not start: {exc}"
        finally:
            theirs.close()
        self._stop = weakref.finalize(self, _stop, self._conn, self._process, self._box)
        if self._process is None:
            self._fail(why)
        else:
            logger.info("swap helper process %d starting", self._process.pid)

    @property
    def pid(self) -> int | None:
        """The helper process's id (None: it could not start)."""
        return None if self._process is None else self._process.pid

    @property
    def ready(self) -> bool:
        """Whether the helper can take work now (never blocks)."""
        if self.failed:
            return False
        if not self._ready:
            try:
                if self._conn.poll():
                    self._ready = self._conn.recv() == _READY
            except (OSError, EOFError) as exc:
                self._fail(f"it did not start: {exc}")
            if self._ready:
                logger.info("swap helper process %s ready", self.pid)
        return self._ready

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the helper to be ready; whether it is."""
        deadline = time.monotonic() + timeout_s
        while not self.ready and not self.failed and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.ready

    def send(
        self,
        frame: Image,
        face: FaceLandmarks,
        identity: Identity,
        settings: SwapSettings,
        *,
        strength: float,
        target: FloatArray | None,
        colour: ColourMemory,
        own_eyes: tuple[float, float],
    ) -> Sent | None:
        """Start the swap of one face of ``frame`` in the helper, like
        ``GeometricSwapper.swap`` (the face's box is copied now: the frame may change
        meanwhile); ``receive`` ends it. None when the helper cannot take it (the caller
        swaps it itself)."""
        if not self.ready:
            return None
        region = swap_region(face.points if target is None else target, frame.shape)
        if region is None:
            return Sent(0, None, None)
        if self._pending is not None and not self._drain(self._pending):
            return None
        x0, y0, x1, y1 = region
        offset = np.array((x0, y0, 0), np.float32)
        box = np.array(frame[y0:y1, x0:x1])
        assert self._box is not None  # a ready helper has its box
        try:
            np.copyto(self._box.view(box.shape), box)
        except (OSError, ValueError) as exc:  # no memory to grow it
            self._fail(f"no room for the box: {exc}")
            return None
        self._jobs += 1
        height, width, channels = box.shape
        job = SwapJob(
            self._jobs,
            settings,
            (height, width, channels),
            dataclasses.replace(face, points=face.points - offset),
            strength,
            None if target is None else target - offset,
            colour,
            own_eyes,
        )
        try:
            if identity is not self._identity:
                self._conn.send(identity)
                self._identity = identity
            self._conn.send(job)
        except Exception as exc:  # a dead socket, a job that won't pickle: the boundary
            self._fail(f"{type(exc).__name__}: {exc}")
            return None
        self._pending = job.number
        return Sent(job.number, region, box)

    def receive(self, frame: Image, sent: Sent, colour: ColourMemory) -> Swapped | None:
        """The swap ``send`` started: its pixels written into ``frame`` (only those it
        changed: a neighbouring face swapped meanwhile keeps its own), whether it
        changed any, its stage timings and the face's colour memory after it (``colour``
        when there was nothing to swap). None when the helper failed it (the caller
        swaps the face itself)."""
        if sent.region is None or sent.box is None:
            return False, {}, colour
        reply = self._reply(sent.number)
        if reply is None:
            return None
        if isinstance(reply, str):  # the swap itself failed there
            logger.warning("the swap helper could not swap a face (%s); swapped here", reply)
            return None
        swapped, timings, memory = reply
        if swapped:
            assert self._box is not None
            box = self._box.view(sent.box.shape)
            x0, y0, x1, y1 = sent.region
            cv2.copyTo(box, changed_pixels(sent.box, box), frame[y0:y1, x0:x1])  # in place
        self.swaps += 1
        return bool(swapped), dict(timings), memory

    def close(self) -> None:
        """Stop the helper process (waits a moment, then kills it)."""
        self._stop()

    def _drain(self, number: int) -> bool:
        """Wait for the reply to job ``number``, sent and never received (the frame's
        processing failed in between), and drop it: until then the helper may still
        write the shared box. Whether the helper is still usable."""
        logger.debug("dropping the swap helper's reply to job %d, never taken", number)
        return self._reply(number) is not None

    def _reply(self, number: int) -> Reply | str | None:
        """Job ``number``'s reply, or None when the helper failed."""
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        self._pending = None
        try:
            while self._conn.poll(max(0.0, deadline - time.monotonic())):
                answered, reply = self._conn.recv()
                if answered == number:
                    return cast("Reply | str", reply)
            self._fail(f"no reply in {REPLY_TIMEOUT_S:g} s")
        except Exception as exc:  # a dead socket, a reply that won't unpickle: the boundary
            self._fail(f"{type(exc).__name__}: {exc}")
        return None

    def _fail(self, why: str) -> None:
        """Give the helper up: logged once, killed now (a stuck one would not stop)."""
        if not self.failed:
            logger.warning("swap helper process failed (%s); faces are swapped in process", why)
        self.failed = True
        self.failed_at = time.monotonic()
        self._ready = False
        self._stop.detach()
        _kill(self._conn, self._process, self._box)


def _kill(
    conn: Connection, process: subprocess.Popen[bytes] | None, box: SharedBox | None = None
) -> None:
    """Kill the helper (nothing to do for one that has ended), close its socket and its
    shared box."""
    if process is not None:
        with contextlib.suppress(OSError):
            process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(STOP_TIMEOUT_S)
    conn.close()
    if box is not None:
        with contextlib.suppress(OSError):
            box.close()


def _stop(conn: Connection, process: subprocess.Popen[bytes] | None, box: SharedBox | None) -> None:
    """Ask the helper to stop, wait a moment, then kill what is left."""
    with contextlib.suppress(OSError, ValueError):
        conn.send(None)
    if process is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(STOP_TIMEOUT_S)
    _kill(conn, process, box)


_ENTRY = (
    "import sys; from appliance.pipeline.swap_helper import main; main(sys.argv[1], sys.argv[2])"
)


def main(fd: str, box_fd: str) -> None:
    """The helper process's entry: serve on the socket ``fd`` and the shared box
    ``box_fd`` it was handed. Ctrl-C in the terminal reaches the whole process group:
    the mirror stops its helpers itself (and a helper whose mirror is gone stops at the
    socket's end)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(Connection(int(fd)), SharedBox.attach(int(box_fd)))


def serve(conn: Connection, shared: SharedBox) -> None:
    """The helper process's loop: an ``Identity`` to swap with, a ``SwapJob`` to do, or
    None to stop. Each job's box is swapped in place in ``shared`` and answered with its
    number and (swapped, timings, colour memory), or a line saying why it failed."""
    identity: Identity | None = None
    swapper: GeometricSwapper | None = None
    conn.send(_READY)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the main process is gone
            return
        if message is None:
            return
        if isinstance(message, Identity):
            identity = message
            continue
        job: SwapJob = message
        try:
            if identity is None:
                raise RuntimeError("no identity was sent")
            if swapper is None or swapper.settings != job.settings:
                swapper = GeometricSwapper(job.settings)
            timings: dict[str, float] = {}
            box = shared.view(job.shape)
            swapped = swapper.swap(
                box,
                job.face,
                identity,
                timings,
                strength=job.strength,
                target=job.target,
                colour=job.colour,
                own_eyes=job.own_eyes,
            )
            del box  # the mapping may be replaced by the next job's
            conn.send((job.number, (swapped, timings, job.colour)))
        except Exception as exc:  # one face's failure; the helper goes on
            conn.send((job.number, f"{type(exc).__name__}: {exc}"))
