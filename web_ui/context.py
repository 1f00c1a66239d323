"""What the request handlers share, kept on the app: ``web_context()`` inside a request."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from flask import Flask, current_app

from appliance.control.api import MirrorControl
from web_ui.auth_store import AuthStore
from web_ui.config import WebConfig
from web_ui.preview_slots import PreviewSlots
from web_ui.ratelimit import LoginLimiter
from web_ui.sessions import SessionRegistry

logger = logging.getLogger(__name__)

EXTENSION_KEY = "face_mirror"


@dataclass
class WebContext:
    control: MirrorControl
    auth: AuthStore
    limiter: LoginLimiter
    config: WebConfig
    sessions: SessionRegistry
    preview: PreviewSlots
    stopping: threading.Event = field(default_factory=threading.Event)
    # set by the server while it serves: closes the connection from (address, port)
    close_connection: Callable[[str, int], None] | None = None
    # set by the server while it serves HTTPS: plain HTTP requests are only redirected
    https_only: bool = False


def web_context(app: Flask | None = None) -> WebContext:
    ctx = (app or current_app).extensions[EXTENSION_KEY]
    assert isinstance(ctx, WebContext)
    return ctx
