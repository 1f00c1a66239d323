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

Reads never hang on a stalled camera (``capture_array()`` alone waits
forever): each asks for the next frame as a job (``capture_array(wait=False)``)
and waits for it at most the read's timeout (``Picamera2.wait(job, timeout)``,
picamera2 >= 0.3.13), keeping an unfinished job for the next read, so slow
frames are never asked for twice. A timeout is ``FrameTimeoutError``; no frame
for ``stall_s`` is a lost camera (closed, opened again).

Debian 12's python3-picamera2 is built for numpy 1.x; with numpy 2 in the
venv its import fails (``numpy.dtype size changed``), which is turned into
one ``SourceError`` naming the fix.
"""

from __future__ import annotations

import concurrent.futures
import importlib
import logging
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from appliance.errors import SourceError
from appliance.media.frames import Frame
from appliance.media.source_base import FrameSource, FrameTimeoutError, as_bgr

logger = logging.getLogger(__name__)

ModuleLoader = Callable[[], ModuleType]

STALL_S = 2.0  # no frame for this long: the camera counts as lost and is opened again
# a wait that ran out: concurrent.futures' own class before Python 3.11, the built-in after
_TIMEOUTS = (TimeoutError, concurrent.futures.TimeoutError)


def load_picamera2() -> ModuleType:
    """The ``picamera2`` module, or ``SourceError`` saying how to get it or how to fix it."""
    try:
        return importlib.import_module("picamera2")
    except ImportError as exc:
        if "numpy" in str(exc).lower():
            raise SourceError(_numpy_abi_message(exc)) from exc
        raise SourceError(
            "picamera2 is not installed: apt install python3-picamera2 and create the venv "
            "with --system-site-packages (or set capture kind: v4l2)"
        ) from exc
    except (ValueError, AttributeError) as exc:  # a C extension built for another numpy
        raise SourceError(_numpy_abi_message(exc)) from exc


def _numpy_abi_message(exc: BaseException) -> str:
    numpy_major = np.__version__.split(".")[0]
    return (
        f"picamera2 cannot be imported ({exc}): Debian's python3-picamera2 is built for "
        f"numpy 1.x but this venv has numpy {np.__version__}"
        + (
            ": reinstall with the `pi` extra (it pins numpy<2 on Python 3.11) or use Debian 13"
            if numpy_major != "1"
            else ": reinstall python3-picamera2 and its python3-simplejpeg to match"
        )
    )


class Picamera2Source(FrameSource):
    """The CSI camera number ``camera_num`` at ``size`` and ``fps``."""

    def __init__(
        self,
        camera_num: int = 0,
        size: tuple[int, int] = (640, 480),
        fps: float = 30.0,
        loader: ModuleLoader = load_picamera2,
        *,
        stall_s: float = STALL_S,
    ) -> None:
        super().__init__(size=(int(size[0]), int(size[1])), fps=float(fps))
        self.camera_num = camera_num
        self.name = f"csi{camera_num}"
        self.stall_s = stall_s
        self._loader = loader
        self._cam: Any = None
        self._job: Any = None  # the frame asked for and not yet received
        self._last_frame_at = 0.0
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
        self._job = None
        self._last_frame_at = time.monotonic()  # the stall clock starts at opening
        return cam

    def _on_stop(self) -> None:
        with self._lock:
            cam, self._cam, self._job = self._cam, None, None
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
                image = self._capture(cam, timeout_s)
            except _TIMEOUTS:
                image = None
                if time.monotonic() - self._last_frame_at < self.stall_s:
                    raise FrameTimeoutError(
                        f"camera {self.name}: no frame within {timeout_s} s"
                    ) from None
                failure = TimeoutError(f"stalled: no frame for {self.stall_s:g} s")
            except Exception as exc:  # a lost camera raises anything
                image, failure = None, exc
            if image is not None and getattr(image, "size", 0) > 0:
                self._last_frame_at = time.monotonic()
                return self._make_frame(as_bgr(image))
            self._cam, self._job = None, None
        _close_quietly(cam)
        logger.warning("camera %s stopped delivering frames (%s); reconnecting", self.name, failure)
        raise SourceError(
            f"camera {self.name} stopped delivering frames ({failure or 'empty frame'}; "
            "cable loose?)"
        )

    def _capture(self, cam: Any, timeout_s: float | None) -> Any:
        """The next frame, waiting at most ``timeout_s`` (at most ``stall_s`` when None);
        an unfinished request is kept for the next call."""
        if self._job is None:
            self._job = cam.capture_array("main", wait=False)
        wait_s = self.stall_s if timeout_s is None else min(timeout_s, self.stall_s)
        image = cam.wait(self._job, timeout=wait_s)  # raises TimeoutError; job kept
        self._job = None
        return image


def _close_quietly(cam: Any) -> None:
    for step in ("stop", "close"):
        try:
            getattr(cam, step)()
        except Exception as exc:  # closing a lost camera may fail
            logger.debug("picamera2 %s failed: %s", step, exc)
