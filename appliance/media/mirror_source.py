"""The one source factory of a running mirror: the source, its mode, mirrored in one place.

``open_mirror_source`` opens what ``mirror run --source`` names: ``camera``
(the hardware profile's capture section), a camera number or ``/dev/videoN``,
a video file or ``demo``. A camera is waited for when missing at start (see
``AwaitedSource``) and flipped into a mirror image when the profile's display
says so (``MirroredSource``, applied here and nowhere else); the result
carries its ``SourceMode``, decided here once.
"""

from __future__ import annotations

from dataclasses import dataclass

from appliance.device.profile import CaptureSpec
from appliance.media.awaited_source import AwaitedSource
from appliance.media.camera_open import open_camera
from appliance.media.camera_source import CameraSource
from appliance.media.mirrored_source import MirroredSource
from appliance.media.source_base import FrameSource
from appliance.media.source_mode import SourceMode
from appliance.media.sources import open_source


@dataclass(frozen=True)
class OpenedSource:
    """A (not yet started) source and the mode it was opened in."""

    source: FrameSource
    mode: SourceMode

    @property
    def live(self) -> bool:
        return self.mode.live


def open_mirror_source(
    spec: str,
    capture: CaptureSpec,
    *,
    mirror: bool = False,
    size: tuple[int, int] = (640, 480),
    fps: float = 30.0,
    frames: int | None = None,
    as_camera: bool = False,
) -> OpenedSource:
    """The source ``spec`` names. ``mirror`` flips a camera's frames (never a file's);
    ``as_camera`` plays a file or the demo as a live camera (``SourceMode.LIVE_CAMERA``).
    A file that cannot be opened raises ``InputError``."""
    camera: FrameSource | None = None
    if spec.strip() == "camera":
        camera = open_camera(capture)
        source = camera
    else:
        source = open_source(spec, size=size, fps=fps, frames=frames)
        if isinstance(source, CameraSource):
            camera = source
    if camera is None:
        mode = SourceMode.LIVE_CAMERA if as_camera else SourceMode.RECORDED
        return OpenedSource(source, mode)
    return OpenedSource(
        AwaitedSource(MirroredSource(camera) if mirror else camera), SourceMode.LIVE_CAMERA
    )
