"""What kind of visitor a source shows: a live camera, or a recording.

Decided once, where the source is opened (``appliance.media.mirror_source``),
and carried from there as an explicit mode: the session reads it for the
liveness gate, the camera-lost screen and systemd's heartbeat. Nothing
else looks at the source's class to guess it.
"""

from __future__ import annotations

import enum


class SourceMode(enum.Enum):
    """``LIVE_CAMERA``: a visitor in front of a camera (or a file played as one,
    ``mirror run --as-camera``): the liveness gate runs, a lost camera is shown.
    ``RECORDED``: a file or the demo photo, not a live visitor: faces swap at once."""

    LIVE_CAMERA = "live-camera"
    RECORDED = "recorded"

    @property
    def live(self) -> bool:
        return self is SourceMode.LIVE_CAMERA
