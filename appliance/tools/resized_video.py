"""A video file source whose frames are letterboxed to a requested size."""

from __future__ import annotations

from pathlib import Path

from appliance.media.frames import Frame, Image
from appliance.media.letterbox import letterbox
from appliance.media.video_source import VideoFileSource


class ResizedVideoSource(VideoFileSource):
    """Plays ``path`` (as fast as possible by default) at ``size``, keeping the aspect."""

    def __init__(self, path: Path, size: tuple[int, int], paced: bool = False) -> None:
        super().__init__(path, paced=paced)
        self.size = size

    def _make_frame(self, image: Image, encoded: bytes | Image | None = None) -> Frame:
        # a JPEG it came from would not be the letterboxed image: not kept
        return super()._make_frame(letterbox(image, self.size))
