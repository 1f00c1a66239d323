"""The "preparing the accelerator" screen, shown while the first TensorRT engines are built.

At the first start TensorRT builds an engine for each model (minutes, once; then it
is cached). The models load before any frame flows, so the HDMI screen would stay
dark all that time. ``PreparingScreen`` starts the display early and keeps this
screen on it through a ``ScreenFeed`` until the models are loaded; ``mirror run``
uses it only when an engine is really to be built. A display that cannot start
here is left to the session's own start, which reports it.
"""

from __future__ import annotations

import logging
from types import TracebackType

from appliance.errors import MirrorError
from appliance.media.overlays import Overlays
from appliance.media.screen_feed import ScreenFeed
from appliance.media.sink_base import FrameSink

logger = logging.getLogger(__name__)


class PreparingScreen:
    """``with PreparingScreen(display, overlays, size):`` shows the screen for the block."""

    def __init__(self, display: FrameSink, overlays: Overlays, size: tuple[int, int]) -> None:
        self.display = display
        self.overlays = overlays
        self.size = size
        self.feed = ScreenFeed([display])

    def __enter__(self) -> PreparingScreen:
        try:
            self.display.start()
        except MirrorError as exc:
            logger.warning("the preparing screen cannot be shown: %s", exc)
            return self
        logger.info("showing the preparing screen while TensorRT builds its engines")
        self.feed.show(self.overlays.preparing_screen(self.size))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.feed.hide()
