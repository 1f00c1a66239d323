"""Frames full screen through SDL2 (pygame), on the ``kmsdrm`` driver by default.

``kmsdrm`` draws straight to the display without X or Wayland, as on a kiosk.
An ``SDL_VIDEODRIVER`` already in the environment wins (``dummy`` in tests,
``x11``/``wayland`` on a desktop). pygame is optional (the ``display``
extra); without it ``start()`` fails with ``MissingExtraError``.

On ``kmsdrm`` SDL needs DRM master: with a desktop (or another program) on
the display, ``pygame.display.init()`` fails ("kmsdrm not available"), and so
``start()`` fails with an ``OutputError``; ``display.ScreenGuard`` keeps
trying, so the mirror appears once the desktop stops.
"""

from __future__ import annotations

import importlib
import logging
import os
from typing import Any

import cv2

from appliance.errors import MissingExtraError, OutputError
from appliance.media.frames import Frame, Image
from appliance.media.letterbox import letterbox
from appliance.media.sink_base import FrameSink

logger = logging.getLogger(__name__)

DEFAULT_DRIVER = "kmsdrm"


def import_pygame() -> Any:
    """The pygame module, or ``MissingExtraError`` saying how to install it."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    try:
        return importlib.import_module("pygame")
    except ImportError as exc:
        raise MissingExtraError(
            "the sdl display needs pygame: pip install '.[display]' (or use kind: framebuffer)"
        ) from exc


class SdlSink(FrameSink):
    """Shows frames letterboxed in a (full-screen) SDL window.

    ``size`` is the window size when not full screen; full screen takes the
    display's own mode. ``flip`` mirrors the whole picture (see
    ``framebuffer_sink`` on why mirroring is normally done at capture).
    """

    def __init__(
        self,
        *,
        fullscreen: bool = True,
        size: tuple[int, int] = (1280, 720),
        flip: bool = False,
    ) -> None:
        super().__init__()
        self.fullscreen = fullscreen
        self.window_size = size
        self.flip = flip
        self.driver: str | None = None
        self._pygame: Any = None
        self._screen: Any = None

    def __repr__(self) -> str:
        return f"SdlSink(driver={self.driver!r})"

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the surface shown; known after ``start()``."""
        if self._screen is None:
            raise RuntimeError(f"{self!r}: the size is known after start()")
        width, height = self._screen.get_size()
        return int(width), int(height)

    def _on_start(self) -> None:
        pygame = import_pygame()
        self.driver = os.environ.setdefault("SDL_VIDEODRIVER", DEFAULT_DRIVER)
        try:
            pygame.display.init()
            if self.fullscreen:
                screen = pygame.display.set_mode((0, 0), pygame.FULLSCREEN)
            else:
                screen = pygame.display.set_mode(self.window_size)
            pygame.mouse.set_visible(False)
        except pygame.error as exc:
            pygame.display.quit()
            raise OutputError(
                f"SDL display cannot start with driver {self.driver}: {exc} "
                "(is another program holding the screen?)"
            ) from exc
        pygame.display.set_caption("mirror")
        self._pygame, self._screen = pygame, screen
        logger.info("SDL display: %sx%s on %s", *self.size, self.driver)

    def _write(self, frame: Frame) -> None:
        self.show(frame.image)

    def show(self, image: Image) -> None:
        """Letterbox a BGR image to the window and present it (no frame count)."""
        pygame, screen = self._pygame, self._screen
        if pygame is None or screen is None:
            raise RuntimeError(f"cannot show: {self!r} is not started")
        fitted = letterbox(image, self.size)
        if self.flip:
            fitted = fitted[:, ::-1]
        rgb = cv2.cvtColor(fitted, cv2.COLOR_BGR2RGB)
        try:
            surface = pygame.image.frombuffer(rgb.tobytes(), self.size, "RGB")
            screen.blit(surface, (0, 0))
            pygame.display.flip()
            pygame.event.pump()  # keeps the window responsive; input is not used
        except pygame.error as exc:  # the display went away (DRM master lost, unplugged)
            raise OutputError(f"SDL display on {self.driver} failed: {exc}") from exc

    def _on_stop(self) -> None:
        pygame, self._pygame, self._screen = self._pygame, None, None
        if pygame is not None:
            pygame.display.quit()
