"""Builders shared by the admin UI tests (this module holds no tests).

A ``Mirror`` is the real thing: a ``FrameProcessor`` built from the model
store with the grace_hopper identity, a ``Telemetry``, and a ``ControlCore``
over them with its files in a temporary data directory (its upload graded by
what the swap shows, as ``mirror run`` builds it). ``run_frames`` feeds
real demo frames through a real ``PipelineRunner`` into telemetry and the
web preview.
"""

from __future__ import annotations

import functools
import re
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from appliance.config import Settings, save_settings
from appliance.control.api import HardwareInfo
from appliance.control.core import ControlCore
from appliance.control.identities import IdentityLibrary
from appliance.eval.photo_grade import graded_enroller
from appliance.media.demo_source import DemoSource
from appliance.modelstore import ModelStore
from appliance.pipeline.adaptive import AdaptiveController
from appliance.pipeline.factory import build_processor
from appliance.pipeline.processor import FrameProcessor
from appliance.pipeline.runner import PipelineRunner
from appliance.pipeline.telemetry import Telemetry
from web_ui.app import create_app
from web_ui.auth_store import USERNAME, AuthStore
from web_ui.config import WebConfig
from web_ui.ratelimit import LoginLimiter

PASSWORD = "staff password 1"
FAST_HASH = "scrypt:4096:8:1"  # tests only: the real cost is the default (tested once)
TOKEN_RE = re.compile(r'name="csrf_token" value="([^"]+)"')


@functools.cache
def model_store() -> ModelStore:
    store = ModelStore()
    missing = store.missing()
    assert not missing, f"models missing {missing}: run `make test` (it fetches them) first"
    return store


@functools.cache
def _photo(name: str) -> np.ndarray:
    image = cv2.imread(str(model_store().path(name)), cv2.IMREAD_COLOR)
    assert image is not None, name
    return image


def photo(name: str) -> np.ndarray:
    """A copy of a real photo of the model store (``grace_hopper``, ``astronaut``)."""
    return _photo(name).copy()


@dataclass
class Mirror:
    control: ControlCore
    processor: FrameProcessor
    telemetry: Telemetry
    base: Path

    @property
    def settings_path(self) -> Path:
        return self.base / "config.yaml"

    @property
    def web_dir(self) -> Path:
        return self.base / "web"

    @property
    def library(self) -> IdentityLibrary:
        return self.control.identities


def build_mirror(base: Path, settings: Settings | None = None, **kwargs: object) -> Mirror:
    """A real processor, telemetry and ``ControlCore``; the config file written first."""
    settings = settings or Settings()
    save_settings(base / "config.yaml", settings)
    processor = build_processor(settings, model_store(), "grace_hopper")
    telemetry = Telemetry()
    control = ControlCore(
        processor,
        telemetry,
        settings,
        base / "config.yaml",
        library=IdentityLibrary(base / "identities"),
        enroller=graded_enroller(settings, model_store()),  # as ``mirror run`` builds it
        state_path=base / "web" / "state.json",
        hardware=HardwareInfo("test-profile", "litert-cpu", ("a note: its reason",)),
        **kwargs,  # type: ignore[arg-type]
    )
    return Mirror(control, processor, telemetry, base)


def build_app(
    mirror: Mirror,
    *,
    password: str = PASSWORD,
    must_change: bool = False,
    limiter: LoginLimiter | None = None,
    config: WebConfig | None = None,
) -> Flask:
    AuthStore(mirror.web_dir / "auth.json", FAST_HASH).provision(password, must_change=must_change)
    announced: list[str] = []
    app = create_app(
        mirror.control,
        mirror.web_dir,
        test_config={"TESTING": True, "PASSWORD_HASH_METHOD": FAST_HASH},
        announce=announced.append,
        limiter=limiter,
        config=config,
    )
    assert not announced, "an existing account must not be replaced"
    return app


def page_token(client: FlaskClient, path: str = "/login") -> str:
    """The CSRF token as a page's form carries it."""
    match = TOKEN_RE.search(client.get(path).text)
    assert match, f"no CSRF field on {path}"
    return match.group(1)


def login(client: FlaskClient, password: str = PASSWORD, username: str = USERNAME) -> TestResponse:
    token = page_token(client)
    return client.post(
        "/login", data={"username": username, "password": password, "csrf_token": token}
    )


def post(client: FlaskClient, path: str, data: Mapping[str, object] | None = None) -> TestResponse:
    """POST a form with this session's CSRF token (log in first)."""
    with client.session_transaction() as session:
        token = session["csrf"]
    return client.post(path, data={**(data or {}), "csrf_token": token})


def run_frames(mirror: Mirror, frames: int = 10) -> None:
    """Real demo frames through a real runner, into telemetry and the web preview."""
    source = DemoSource(photo("astronaut"), size=(320, 240), fps=30.0, frames=frames)
    guarded = mirror.control.processor
    runner = PipelineRunner(
        source,
        guarded,
        [mirror.control.preview_sink],
        mirror.telemetry,
        2000.0,
        frame_limit=frames,
        controller=AdaptiveController(guarded, mirror.telemetry, Settings().pipeline),
    )
    runner.start()
    assert runner.wait(30.0), "the demo run did not end"
    runner.stop()
    assert mirror.telemetry.snapshot().frames_out > 0


class FakeClock:
    """Monotonic seconds that move only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# ---- upload payloads ----------------------------------------------------------------------


def encode(image: np.ndarray, ext: str = ".jpg") -> bytes:
    ok, buf = cv2.imencode(ext, image)
    assert ok
    return buf.tobytes()


def plain_image() -> np.ndarray:
    """A smooth gradient: an image without any face."""
    ramp = np.linspace(40, 220, 480, dtype=np.uint8)
    return np.dstack([np.tile(ramp, (360, 1))] * 3)


def two_faces() -> np.ndarray:
    """Two real faces side by side (grace_hopper and the astronaut, cropped to their heads)."""
    grace = photo("grace_hopper")[0:400, 56:456]
    astronaut = cv2.resize(photo("astronaut")[0:300, 100:400], (400, 400))
    return np.hstack([grace, astronaut])


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bomb_png(width: int = 30000, height: int = 30000) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` (its data is a few zero rows)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = zlib.compress(b"\0" * (width + 1) * 4, 9)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", rows)
        + _chunk(b"IEND", b"")
    )
