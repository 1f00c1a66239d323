"""Whole-frame detection on a helper thread, used a frame or two after it started.

A followed face needs no detection; the periodic one is there to find faces
that came in (and, in ``largest`` mode, a larger newcomer). Run in line it
adds the detector's time to every ``detect_every``-th frame, and those frames
set the 95th percentile of the latency. With a second CPU it runs on a helper
thread instead, on its own interpreter: the processing thread copies the
frame (the swap paints into it after), and the helper letterboxes the copy
and runs the model; the tracker takes the result when it is ready. The
processor holds the detection until its frame is done (``hold``, then
``launch``), so the model runs while the processing thread waits for the
next frame, not beside this frame's swap on the second CPU the swap uses too.
(Letterboxing on the processing thread
took 1.5 ms of a 1280x720 detection frame, the copy 0.26; 0.43 and 0.07 at
640x480.) Detections a frame or two old still match their
faces (centres within ``MATCH_DISTANCE`` face sizes), and a new face gets its
landmarks from the current frame.

While there is room for more faces a detection includes the tile scan's next
tiles (small faces): they are cut and prepared on the processing thread too,
and run beside the whole frame on the helper's own interpreter of the
full-range model. In line, the scan's frames cost 47-57 ms against 17-30 for
three 80 px faces at 1280x720, and the scan runs every few frames until the
group is complete.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from appliance.vision.detector import FaceDetector
from appliance.vision.tile_scan import PreparedTile, TileScan, merge
from appliance.vision.types import Detection

logger = logging.getLogger(__name__)


class DetectAhead:
    """At most one detection in flight on a helper thread.

    ``tiles``: the analyzer's tile scan (its sweep moves on the calling thread)
    and ``tile_detector`` its model on the helper's own interpreter; without
    both, a scan is never asked of the helper.
    """

    def __init__(
        self,
        detector: FaceDetector,
        tiles: TileScan | None = None,
        tile_detector: FaceDetector | None = None,
    ) -> None:
        self.detector = detector  # its own interpreter: nobody else runs it
        self.tiles = tiles if tile_detector is not None else None
        self.tile_detector = tile_detector  # its own interpreter too
        self._executor: ThreadPoolExecutor | None = None
        self._pending: Future[list[Detection]] | None = None
        self._held: tuple[npt.NDArray[np.uint8], list[PreparedTile]] | None = None

    @property
    def scans(self) -> bool:
        """Whether a detection here can include the tile scan."""
        return self.tiles is not None

    @property
    def held(self) -> bool:
        """Whether a detection is prepared and waits for ``launch``."""
        return self._held is not None

    def hold(self, image: npt.NDArray[np.uint8], scan: bool = False) -> bool:
        """Prepare the detection of ``image`` in the background (a copy, and the tile
        scan's next tiles when ``scan`` and ``scans``) and hold it until ``launch``:
        the processor launches it once its frame is done, so the model runs in the
        wait for the next frame, not beside the frame's own swap. False (nothing
        held) if one is in flight or held."""
        if self._pending is not None or self._held is not None:
            return False
        frame = np.array(image)  # its own copy: the swap paints into ``image`` meanwhile
        tiles = self.tiles.prepare_next(image) if scan and self.tiles is not None else []
        self._held = (frame, tiles)
        return True

    def launch(self) -> None:
        """Start the held detection on the helper thread (nothing held: nothing to do)."""
        held, self._held = self._held, None
        if held is None:
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="detect")
        self._pending = self._executor.submit(self._run, *held)

    def _run(self, frame: npt.NDArray[np.uint8], tiles: list[PreparedTile]) -> list[Detection]:
        found = self.detector.detect(frame)
        if tiles and self.tiles is not None:
            found = merge(found + self.tiles.finish(tiles, self.tile_detector))
        return found

    def ready(self) -> list[Detection] | None:
        """The finished detection's faces (taken: the next call gives None), or None."""
        pending = self._pending
        if pending is None or not pending.done():
            return None
        self._pending = None
        return pending.result()

    def cancel(self) -> None:
        """Drop the detection held or in flight (waits for the model to finish with it)."""
        self._held = None
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.exception()  # wait; a failure is of no use now
