"""The frame sinks: discard, write an mp4, serve a live preview over HTTP."""

from __future__ import annotations

import logging

from appliance.media.null_sink import NullSink
from appliance.media.preview_server import PreviewServer
from appliance.media.sink_base import FrameSink
from appliance.media.video_sink import VideoFileSink

logger = logging.getLogger(__name__)

__all__ = ["FrameSink", "NullSink", "PreviewServer", "VideoFileSink"]
