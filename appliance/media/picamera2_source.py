"""Frames from a Raspberry Pi CSI camera through Picamera2 (libcamera).

CSI cameras on a Pi do not work with ``cv2.VideoCapture``; Picamera2 does.
It comes from the OS (``apt install python3-picamera2``; the venv needs
``--system-site-packages``), so it is imported at ``start()``, and the module
loader is injectable for tests.

The stream is asked for in ``RGB888``, which libcamera lays out as B, G, R
bytes: the arrays are BGR for OpenCV as they come (``as_bgr`` drops a fourth
channel if the driver gives XBGR). A camera that fails is closed and the read
raises ``SourceError``; every later read tries to open it again, so the
capture thread's back-off paces the attempts, as for V4L2 cameras.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from appliance.errors import SourceError
from appliance.media.source_base import FrameSource, as_bgr
from appliance.pipeline.frames import Frame

logger = logging.getLogger(__name__)

ModuleLoader = Callable[[], ModuleType]


def load_picamera2() -> ModuleType:
    """The ``picamera2`` module, or ``SourceError`` saying how to get it."""
    try:
        return importlib.import_module("picamera2")
    except ImportError as exc:
        raise SourceError(
            "picamera2 is not installed: apt install python3-picamera2 and create the venv "
            "with --system-site-packages (or set capture kind: v4l2)"
        ) from exc


class Picamera2Source(FrameSource):
    """The CSI camera number ``camera_num`` at ``size`` and ``fps``."""

    def __init__(
        self,
        camera_num: int = 0,
        size: tuple[int, int] = (640, 480),
        fps: float = 30.0,
        loader: ModuleLoader = load_picamera2,
    ) -> None:
        super().__init__(size=(int(size[0]), int(size[1])), fps=float(fps))
        self.camera_num = camera_num
        self.name = f"csi{camera_num}"
        self._loader = loader
        self._cam: Any = None
        self._lock = threading.Lock()
        self.reconnects = 0

    def __repr__(self) -> str:
        return f"Picamera2Source({self.camera_num})"

    def _on_start(self) -> None:
        cam = self._open()
        with self._lock:
            self._cam = cam

    def _open(self) -> Any:
        module = self._loader()
        try:
            cam = module.Picamera2(self.camera_num)
        except (IndexError, RuntimeError, OSError) as exc:
            raise SourceError(
                f"camera {self.name} not found or busy ({exc}); is the ribbon cable seated?"
            ) from exc
        try:
            config = cam.create_video_configuration(
                main={"size": self.size, "format": "RGB888"},
                controls={"FrameRate": self.fps},
                buffer_count=2,
            )
            cam.configure(config)
            cam.start()
        except Exception as exc:  # libcamera raises many kinds
            _close_quietly(cam)
            raise SourceError(f"camera {self.name} cannot be started: {exc}") from exc
        logger.info("%s: %sx%s @ %s fps (picamera2)", self.name, *self.size, self.fps)
        return cam

    def _on_stop(self) -> None:
        with self._lock:
            cam, self._cam = self._cam, None
        if cam is not None:
            _close_quietly(cam)

    def _read(self, timeout_s: float | None) -> Frame | None:
        with self._lock:
            if not self.started:
                return None
            if self._cam is None:
                self._cam = self._open()
                self.reconnects += 1
                logger.info("camera %s reconnected", self.name)
            cam = self._cam
            failure: Exception | None = None
            try:
                image = cam.capture_array("main")
            except Exception as exc:  # a lost camera raises anything
                image, failure = None, exc
            if image is not None and getattr(image, "size", 0) > 0:
                return self._make_frame(as_bgr(image))
            self._cam = None
        _close_quietly(cam)
        logger.warning("camera %s stopped delivering frames (%s); reconnecting", self.name, failure)
        raise SourceError(f"camera {self.name} stopped delivering frames (cable loose?)")


def _close_quietly(cam: Any) -> None:
    for step in ("stop", "close"):
        try:
            getattr(cam, step)()
        except Exception as exc:  # closing a lost camera may fail
            logger.debug("picamera2 %s failed: %s", step, exc)
