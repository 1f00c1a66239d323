"""``create_app``: the admin UI's Flask app over a ``MirrorControl``.

Configuration is layered: safe defaults, then ``test_config``. On the first
start without an account (development: provisioning makes one on a real
device) a password is generated and handed to ``announce`` once (it prints
to the console by default; ``mirror run`` also shows it on the display).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from flask import Flask

from appliance.control.api import MirrorControl
from appliance.control.uploads import MAX_UPLOAD_BYTES
from appliance.paths import web_dir
from web_ui import csrf, errorpages, filters, scrape_token, security
from web_ui.auth_store import HASH_METHOD, USERNAME, AuthStore
from web_ui.blueprints import (
    auth,
    dashboard,
    health,
    identities,
    logs,
    preview,
    settings,
    updates,
)
from web_ui.config import WebConfig
from web_ui.context import EXTENSION_KEY, WebContext
from web_ui.preview_slots import PreviewSlots
from web_ui.ratelimit import LoginLimiter
from web_ui.secret_key import load_or_create_secret
from web_ui.sessions import SessionRegistry
from web_ui.trusted_clients import TrustedClients

logger = logging.getLogger(__name__)

FORM_OVERHEAD_BYTES = 64 * 1024  # multipart headers and the other fields around a photo
AUTH_NAME = "auth.json"
SECRET_NAME = "secret_key"
TRUSTED_NAME = "trusted_clients.json"  # addresses that logged in (web_ui.trusted_clients)


def print_password(password: str) -> None:
    print(
        f"mirror: admin UI first start: user {USERNAME!r}, password {password!r} "
        "(you must change it at the first login)",
        file=sys.stderr,
        flush=True,
    )


def create_app(
    control: MirrorControl,
    directory: Path | None = None,
    *,
    config: WebConfig | None = None,
    test_config: Mapping[str, Any] | None = None,
    announce: Callable[[str], None] = print_password,
    limiter: LoginLimiter | None = None,
) -> Flask:
    """The app; ``directory`` (default ``<data dir>/web``) holds the account and secret key,
    and ``updates/`` beside it the update queue (``web_ui.blueprints.updates``)."""
    directory = directory or web_dir()
    config = config or WebConfig()
    app = Flask(__name__)
    app.config.from_mapping(
        SECRET_KEY=load_or_create_secret(directory / SECRET_NAME),
        MAX_CONTENT_LENGTH=MAX_UPLOAD_BYTES + FORM_OVERHEAD_BYTES,
        SESSION_COOKIE_NAME="mirror_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=False,  # set per request: Secure whenever it came over HTTPS
        PERMANENT_SESSION_LIFETIME=timedelta(hours=config.session_hours),
        SEND_FILE_MAX_AGE_DEFAULT=timedelta(hours=1),
        PASSWORD_HASH_METHOD=HASH_METHOD,
        DATA_DIR=directory.parent,  # <data dir>: web/ is in it, and updates/ beside it
    )
    app.jinja_env.trim_blocks = True
    app.jinja_env.lstrip_blocks = True
    if test_config:
        app.config.from_mapping(test_config)
    app.config[scrape_token.CONFIG_KEY] = directory / scrape_token.TOKEN_NAME
    scrape_token.load_or_create_token(app.config[scrape_token.CONFIG_KEY])  # made at first start
    store = AuthStore(directory / AUTH_NAME, app.config["PASSWORD_HASH_METHOD"])
    if not store.exists():
        announce(store.provision())
    lifetime = app.config["PERMANENT_SESSION_LIFETIME"]
    app.extensions[EXTENSION_KEY] = WebContext(
        control,
        store,
        limiter or LoginLimiter(trusted=TrustedClients(directory / TRUSTED_NAME)),
        config,
        SessionRegistry(lifetime.total_seconds()),
        PreviewSlots(config.max_preview_clients, config.preview_stall_s),
    )
    csrf.init_app(app)
    security.init_app(app)
    errorpages.init_app(app)
    filters.init_app(app)
    for module in (auth, dashboard, preview, settings, identities, logs, health, updates):
        app.register_blueprint(module.bp)
    return app
