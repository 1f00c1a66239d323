"""Frames from a Jetson CSI camera: a GStreamer pipeline opened by OpenCV.

``nvarguscamerasrc`` (the Argus camera daemon) delivers NVMM buffers;
``nvvidconv`` copies them out (and flips or rotates with ``flip-method``),
``videoconvert`` makes BGR and ``appsink drop=1 max-buffers=1`` keeps only
the newest frame. This needs an OpenCV built with GStreamer (JetPack's is;
the pip wheels are not): without it the source fails with one clear line.

A stalled sensor: the capture is asked for a read timeout of ``READ_TIMEOUT_MS``
(``CAP_PROP_READ_TIMEOUT_MSEC``, which OpenCV's GStreamer backend honours
where it has it); a read that then fails is a timeout until ``stall_s`` has
passed without a frame, after which the camera is lost and opened again, as
for V4L2 cameras.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import cv2

from appliance.errors import SourceError
from appliance.media.camera_source import CameraSource, CaptureLike

logger = logging.getLogger(__name__)

_GSTREAMER_LINE = re.compile(r"^\s*GStreamer:\s*(\S+)", re.MULTILINE)
READ_TIMEOUT_MS = 1000  # the longest one read waits for the appsink's next frame


def csi_pipeline(sensor_id: int, size: tuple[int, int], fps: float, flip_method: int = 0) -> str:
    """The GStreamer pipeline string for CSI sensor ``sensor_id``."""
    width, height = size
    return (
        f"nvarguscamerasrc sensor-id={sensor_id} ! "
        f"video/x-raw(memory:NVMM),width={width},height={height},framerate={round(fps)}/1 ! "
        f"nvvidconv flip-method={flip_method} ! video/x-raw,format=BGRx ! "
        "videoconvert ! video/x-raw,format=BGR ! appsink drop=1 max-buffers=1"
    )


def opencv_has_gstreamer(build_information: str | None = None) -> bool:
    """Whether ``cv2.getBuildInformation()`` (or the text given) lists GStreamer as YES."""
    text = cv2.getBuildInformation() if build_information is None else build_information
    match = _GSTREAMER_LINE.search(text)
    return bool(match and match.group(1).upper().startswith("YES"))


def gstreamer_capture(pipeline: int | str, api_preference: int) -> CaptureLike:
    """A ``cv2.VideoCapture`` on a pipeline string (the backend asked for is ignored)."""
    return cv2.VideoCapture(str(pipeline), cv2.CAP_GSTREAMER)


class GStreamerCsiSource(CameraSource):
    """A ``CameraSource`` whose "device" is the CSI pipeline; same reconnect behaviour.

    The size and rate are fixed by the pipeline, so nothing is set on the
    capture; ``size`` and ``fps`` are what the pipeline asks for.
    """

    def __init__(
        self,
        sensor_id: int = 0,
        size: tuple[int, int] = (1280, 720),
        fps: float = 30.0,
        flip_method: int = 0,
        capture_factory: Callable[[int | str, int], CaptureLike] = gstreamer_capture,
    ) -> None:
        self.pipeline = csi_pipeline(sensor_id, size, fps, flip_method)
        super().__init__(self.pipeline, size=size, fps=fps, capture_factory=capture_factory)
        self.sensor_id = sensor_id
        self.name = f"csi{sensor_id}"

    def __repr__(self) -> str:
        return f"GStreamerCsiSource({self.sensor_id})"

    def _on_start(self) -> None:
        if self._factory is gstreamer_capture and not opencv_has_gstreamer():
            raise SourceError(
                "this OpenCV has no GStreamer support, so the Jetson CSI camera cannot be "
                "opened: use JetPack's OpenCV (python3-opencv, venv --system-site-packages)"
            )
        super()._on_start()

    def _open_failure(self) -> str:
        return (
            f"CSI camera {self.sensor_id} cannot be opened through nvarguscamerasrc "
            "(ribbon cable, or is nvargus-daemon running?)"
        )

    def _configure(self, cap: CaptureLike) -> None:
        if not cap.set(cv2.CAP_PROP_READ_TIMEOUT_MSEC, READ_TIMEOUT_MS):
            logger.warning(
                "%s: this OpenCV takes no GStreamer read timeout: a stalled sensor holds the "
                "capture until nvarguscamerasrc gives up",
                self.name,
            )
        logger.info("%s: %sx%s @ %s fps (GStreamer)", self.name, *self.size, self.fps)
