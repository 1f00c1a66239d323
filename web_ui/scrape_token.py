"""The ``/metrics`` scrape credential: a per-device token, made at the first start, kept 0600.

The metrics say whether a person stands in front of the mirror right now, so nobody on
the LAN reads them without this token (or a staff login). Prometheus sends it either as
a bearer token (``authorization: {credentials_file: ...}``) or as the password of HTTP
basic auth (``basic_auth: {username: metrics, password_file: ...}``; the user name is
not checked). Werkzeug parses the ``Authorization`` header; the token is compared with
``hmac.compare_digest`` and read from its file on every scrape, so ``mirror
metrics-token --rotate`` takes effect without a restart.
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
from pathlib import Path

from flask import Response, current_app, request
from werkzeug.datastructures import Authorization

from appliance.fileio import atomic_write_text, keep_private
from web_ui.security import logged_in

logger = logging.getLogger(__name__)

TOKEN_NAME = "metrics_token"  # in <data dir>/web
TOKEN_BYTES = 32
MIN_TOKEN_CHARS = 32
MODE = 0o600
CONFIG_KEY = "METRICS_TOKEN_FILE"  # app.config: where the app's token lives
REALM = 'Bearer realm="mirror metrics"'  # the WWW-Authenticate answer to a missing token


def read_token(path: Path) -> str | None:
    """The token in ``path``; None when there is none (or it is too short to trust)."""
    try:
        token = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return token if len(token) >= MIN_TOKEN_CHARS else None


def load_or_create_token(path: Path) -> str:
    """The token in ``path``, made (random, 0600) when there is none; a file readable by
    others is made private."""
    token = read_token(path)
    if token is None:
        return rotate_token(path)
    keep_private(path, "metrics token")
    return token


def rotate_token(path: Path) -> str:
    """A new random token in ``path`` (0600, owned as the old one was): the old one stops
    working at once."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    owner = _owner(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write_text(path, token + "\n", mode=MODE)
    if owner is not None and os.geteuid() == 0 and owner != (0, 0):
        os.chown(path, *owner)  # root rotating the service's token keeps it the service's
    logger.info("new metrics scrape token in %s", path)
    return token


def _owner(path: Path) -> tuple[int, int] | None:
    for candidate in (path, path.parent):
        try:
            stat = candidate.stat()
        except OSError:
            continue
        return stat.st_uid, stat.st_gid
    return None


def offered_token(auth: Authorization | None) -> str | None:
    """The credential a request offers: a bearer token, or the basic-auth password."""
    if auth is None:
        return None
    if auth.type == "bearer":
        return auth.token
    if auth.type == "basic":
        return auth.password
    return None


def token_matches(auth: Authorization | None, path: Path) -> bool:
    """Whether the request's credential is the device's scrape token."""
    offered, expected = offered_token(auth), read_token(path)
    if not offered or expected is None:
        return False
    return hmac.compare_digest(offered.encode("utf-8"), expected.encode("ascii"))


def scrape_refusal() -> Response | None:
    """401 (with ``WWW-Authenticate``) unless the request carries the scrape token or comes
    from a logged-in staff session; None when it may read the metrics."""
    if logged_in() or token_matches(request.authorization, current_app.config[CONFIG_KEY]):
        return None
    return Response(
        "the metrics need the scrape token: see `mirror metrics-token`\n",
        status=401,
        headers={"WWW-Authenticate": REALM, "Content-Type": "text/plain; charset=utf-8"},
    )
