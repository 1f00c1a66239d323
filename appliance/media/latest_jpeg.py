"""Latest-wins frame holder that JPEG-encodes each frame at most once, on demand.

Writers only swap a reference and notify; readers wait for a newer frame and
share one encoding of it, so a slow reader never holds up the writer and N
readers cost one encode per frame (none while nobody reads).
"""

from __future__ import annotations

import logging
import threading

import cv2

from appliance.errors import OutputError
from appliance.media.frames import Image

logger = logging.getLogger(__name__)


class LatestJpeg:
    """Holds the newest image and its JPEG; ``seq`` counts published images."""

    def __init__(self, jpeg_quality: int = 80) -> None:
        self.jpeg_quality = int(jpeg_quality)
        self._cond = threading.Condition()
        self._image: Image | None = None
        self._seq = 0
        self._closed = False
        self._encode_lock = threading.Lock()
        self._jpeg: bytes | None = None
        self._jpeg_seq = 0

    def publish(self, image: Image) -> None:
        """Make ``image`` the latest (the caller must not modify it afterwards)."""
        with self._cond:
            self._image = image
            self._seq += 1
            self._cond.notify_all()

    def close(self) -> None:
        """Wake every waiter; ``wait_newer`` returns None from now on."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def reopen(self) -> None:
        with self._cond:
            self._closed = False

    def wait_newer(self, seq: int, timeout_s: float) -> int | None:
        """The latest ``seq`` once it is past ``seq`` or after ``timeout_s``; None when closed."""
        with self._cond:
            self._cond.wait_for(lambda: self._closed or self._seq > seq, timeout_s)
            return None if self._closed else self._seq

    def jpeg(self) -> tuple[int, bytes] | None:
        """The latest frame as (seq, JPEG bytes); None before the first frame."""
        with self._cond:
            seq, image = self._seq, self._image
        if image is None:
            return None
        with self._encode_lock:
            if self._jpeg is None or self._jpeg_seq < seq:
                self._jpeg = self._encode(image)
                self._jpeg_seq = seq
            return self._jpeg_seq, self._jpeg

    def _encode(self, image: Image) -> bytes:
        ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, self.jpeg_quality])
        if not ok:
            raise OutputError(f"JPEG encoding failed for an image of shape {image.shape}")
        return buf.tobytes()
