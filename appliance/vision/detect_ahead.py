"""Whole-frame detection on a helper thread, used a frame or two after it started.

A followed face needs no detection; the periodic one is there to find faces
that came in (and, in ``largest`` mode, a larger newcomer). Run in line it
adds the detector's time to every ``detect_every``-th frame, and those frames
set the 95th percentile of the latency. With a second CPU it runs on a helper
thread instead, on its own interpreter: the frame is prepared (letterboxed,
so the image may change after) on the processing thread, the model runs
beside the next frames' landmarks and swap, and the tracker takes the
result when it is ready. Detections a frame or two old still match their
faces (centres within ``MATCH_DISTANCE`` face sizes), and a new face gets its
landmarks from the current frame.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from appliance.vision.detector import FaceDetector
from appliance.vision.types import Detection

logger = logging.getLogger(__name__)


class DetectAhead:
    """At most one detection in flight on a helper thread."""

    def __init__(self, detector: FaceDetector) -> None:
        self.detector = detector  # its own interpreter: nobody else runs it
        self._executor: ThreadPoolExecutor | None = None
        self._pending: Future[list[Detection]] | None = None

    def start(self, image: npt.NDArray[np.uint8]) -> None:
        """Detect on ``image`` in the background (nothing if one is in flight)."""
        if self._pending is not None:
            return
        prepared = self.detector.prepare(image)
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="detect")
        self._pending = self._executor.submit(self.detector.finish, prepared)

    def ready(self) -> list[Detection] | None:
        """The finished detection's faces (taken: the next call gives None), or None."""
        pending = self._pending
        if pending is None or not pending.done():
            return None
        self._pending = None
        return pending.result()

    def cancel(self) -> None:
        """Drop the detection in flight (waits for the model to finish with it)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.exception()  # wait; a failure is of no use now
