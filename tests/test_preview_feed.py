"""One preview feed: the admin preview and the MJPEG preview server share one JPEG per frame.

A real session runs the demo (real models) with ``mirror run``'s wiring: the
preview server reads the feed the control core's admin preview reads. Both
previews hand out the very same bytes, and each frame is encoded once
however many previews and clients read it.
"""

from __future__ import annotations

import urllib.request
from typing import Any

import numpy as np
import pytest

from appliance.config import Settings
from appliance.inference.runtime import choose_for_device
from appliance.media.demo_source import DemoSource
from appliance.media.latest_jpeg import LatestJpeg
from appliance.media.preview_server import PreviewServer
from appliance.media.preview_sink import WebPreviewSink
from appliance.modelstore import ModelStore
from appliance.session import MirrorSession, SessionOptions
from tests.waiting import wait_for


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        body: bytes = response.read()
        return body


def test_both_previews_share_one_encode_per_frame(
    store: ModelStore, astronaut: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoded: list[int] = []
    original = LatestJpeg._encode

    def counting(self: LatestJpeg, image: Any) -> bytes:
        encoded.append(id(self))
        return original(self, image)

    monkeypatch.setattr(LatestJpeg, "_encode", counting)
    feed = WebPreviewSink()
    server = PreviewServer(port=0, hub=feed.hub)
    source = DemoSource(astronaut, size=(640, 480), paced=True, fps=30.0, frames=300)
    options = SessionOptions(extra_sinks=[server], preview=feed)
    choice = choose_for_device(store, override="x86-cpu")
    session = MirrorSession(Settings(), store, choice, source, options)
    assert session.control.preview_sink is feed
    session.start()
    same = 0
    try:
        assert wait_for(lambda: feed.frames_written >= 3, 60.0)
        for _ in range(40):  # both previews read; the same frame gives the same bytes
            admin = session.control.preview_jpeg()
            served = _get(server.url + "frame.jpg")
            same += admin is not None and admin[1] == served
        written = feed.frames_written
    finally:
        session.stop()
    assert same > 0 and served[:2] == b"\xff\xd8"
    assert set(encoded) == {id(feed.hub)}  # one encoder for both previews
    assert len(encoded) <= written  # at most once per frame
