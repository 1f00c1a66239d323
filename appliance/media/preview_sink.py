"""The preview feed: a frame sink that keeps the latest labelled frame for every preview.

The admin UI's preview reads its ``hub``, and so does ``mirror run``'s MJPEG
preview server (``PreviewServer(hub=...)``): ``write()`` only swaps a reference,
and the frame is JPEG-encoded once, on demand, however many previews and
browsers watch it.
"""

from __future__ import annotations

import logging

from appliance.media.frames import Frame
from appliance.media.latest_jpeg import LatestJpeg
from appliance.media.sink_base import FrameSink

logger = logging.getLogger(__name__)


class WebPreviewSink(FrameSink):
    """Latest-wins holder of the output frames for ``/preview.mjpg`` and ``/preview.jpg``."""

    def __init__(self, jpeg_quality: int = 75) -> None:
        super().__init__()
        self.hub = LatestJpeg(jpeg_quality)

    def __repr__(self) -> str:
        return "WebPreviewSink()"

    def _on_start(self) -> None:
        self.hub.reopen()

    def _write(self, frame: Frame) -> None:
        self.hub.publish(frame.image)

    def _on_stop(self) -> None:
        self.hub.close()
