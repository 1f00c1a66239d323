"""Decoding a camera's JPEG frames in two halves at once, where they allow it.

An MJPG camera's frame is decoded on the capture thread while the process
thread waits for it: at 1280x720 that decode (1.05-1.22 ms p50 in the
pipeline) was a ninth of a one-face frame's latency, on one CPU with the other
idle. A frame with restart markers (``media.jpeg_restarts``) is cut in two:
a helper thread makes and decodes the bottom while the caller decodes the
top, each straight into its rows of one image (libjpeg-turbo runs without
the GIL). In ``mirror bench`` (1280x720, one face, 2 vCPUs, runs in turns) the
decode went to 0.67-0.84 ms and the pipeline's e2e p50 / process p50 from
1.151-1.156 to 1.103-1.132.

The helper is held off the caller's CPU (``inference.spread``): a scheduler
that packs a lightly loaded process onto few CPUs would wake it on the
caller's own, and the two halves would take longer than the whole (1.50-1.57
ms against 1.29-1.35, decoding alone). The cut moves a row at a time towards
where both halves end together (the helper starts later, woken): the caller
then seldom waits to be woken in turn. A frame that cannot be cut, a small
one, or a caller that may use one CPU only is decoded whole on the caller's
thread, as ``media.jpeg`` does.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass, field

import numpy as np

from appliance.inference.spread import Spread
from appliance.media.frames import Image
from appliance.media.jpeg import Encoded, decode_jpeg
from appliance.media.jpeg_restarts import Cut, cut_top
from appliance.vision.face_pool import usable_cpus

logger = logging.getLogger(__name__)

HELPER_WAIT_S = 1.0  # a half not back by then: the frame is decoded whole instead
# below this many pixels a frame is decoded whole: two halves of a 640x480 frame took
# 0.61-0.63 ms against 0.56 whole (the helper's wake-up costs what half the decode saves)
MIN_PIXELS = 600_000
SHARE_STEP = 0.02  # the caller's share of the rows moves by this after each frame
SHARE_RANGE = (0.3, 0.8)


@dataclass
class _Job:
    data: bytes
    cut: Cut
    out: Image  # the rows below the cut
    done: queue.SimpleQueue[BaseException | None] = field(default_factory=queue.SimpleQueue)


class HalvesDecoder:
    """Decodes JPEGs (``decode``) two halves at a time where it can; ``close()`` ends
    its helper thread (started by the first frame it cuts). ``halves`` and ``whole``
    count the frames decoded each way."""

    def __init__(self, name: str = "jpeg") -> None:
        self.name = name
        self.halves = 0
        self.whole = 0
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._spread = Spread([])
        self._lock = threading.Lock()
        self._closed = False
        self.share = 0.5  # of the rows, decoded by the caller (the top)

    def decode(self, data: Encoded) -> Image | None:
        """``data`` (a JPEG's bytes, or a capture's row of them) as a writable BGR
        image, or None when it is no JPEG libjpeg can read (as ``decode_jpeg``)."""
        whole, cut = b"", None
        if usable_cpus() > 1:
            whole = _as_bytes(data)
            cut = cut_top(whole, self.share, MIN_PIXELS)
        with self._lock:
            image = None if cut is None or self._closed else self._in_halves(whole, cut)
            if image is None:
                self.whole += 1
                return decode_jpeg(data)
            self.halves += 1
            return image

    def close(self) -> None:
        """End the helper thread; later frames are decoded whole. Idempotent."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            thread.join(HELPER_WAIT_S)

    def _in_halves(self, data: bytes, cut: Cut) -> Image | None:
        out = np.empty((cut.height, cut.width, 3), np.uint8)
        job = _Job(data, cut, out[cut.top_rows :])
        self._helper()
        self._spread.before_run()
        self._jobs.put(job)
        top = decode_jpeg(cut.top, into=out[: cut.top_rows])
        try:  # the helper writes into ``out`` until it answers
            bottom = self._helper_done(job)
        except queue.Empty:
            logger.warning("%s: no half back from the helper in %g s", self.name, HELPER_WAIT_S)
            return None
        if top is None or bottom is not None:
            logger.debug("%s: a half did not decode: %s", self.name, bottom or "the top")
            return None
        return out

    def _helper_done(self, job: _Job) -> BaseException | None:
        """The helper's answer, the cut moved towards where both halves end together:
        down when the caller waited for the helper, up when it did not."""
        try:
            answer = job.done.get_nowait()
            self.share = max(SHARE_RANGE[0], self.share - SHARE_STEP)
        except queue.Empty:
            answer = job.done.get(timeout=HELPER_WAIT_S)
            self.share = min(SHARE_RANGE[1], self.share + SHARE_STEP)
        return answer

    def _helper(self) -> None:
        if self._thread is not None:
            return
        thread = threading.Thread(target=self._work, name=self.name, daemon=True)
        thread.start()
        self._thread = thread
        if thread.native_id is not None:
            self._spread = Spread([thread.native_id])

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                bottom = job.cut.bottom(job.data)
                if bottom is None:
                    raise ValueError("the restart markers below the cut do not add up")
                if decode_jpeg(bottom, into=job.out) is None:
                    raise ValueError("the bottom half did not decode")
            except Exception as exc:  # handed to the caller, who decodes the frame whole
                job.done.put(exc)
            else:
                job.done.put(None)


def _as_bytes(data: Encoded) -> bytes:
    return data if isinstance(data, bytes) else np.ascontiguousarray(data).tobytes()
