"""CSRF protection: a per-session token, required on every state-changing request.

Forms carry it as the hidden field ``csrf_token`` (templates call
``csrf_token()``); scripts send it in the ``X-CSRF-Token`` header (the page
has it in ``<meta name="csrf-token">``). A missing or wrong token is a 400
with a message that says what to do. A request whose ``Origin`` header names
another site (not one of the device's own hosts, ``web_ui.hosts``, on this
port) is refused the same way (browsers send ``null`` instead of our
origin under our ``no-referrer`` policy, and some send none: both pass on
to the token check).
"""

from __future__ import annotations

import hmac
import logging
import secrets

from flask import Flask, abort, request, session

from web_ui.context import web_context
from web_ui.hosts import allowed_hosts

logger = logging.getLogger(__name__)

SESSION_KEY = "csrf"
FIELD = "csrf_token"
HEADER = "X-CSRF-Token"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
REJECTED = "This form has expired or did not come from this page: reload the page and try again."


def csrf_token() -> str:
    """This session's token (made on first use)."""
    token = session.get(SESSION_KEY)
    if not isinstance(token, str) or not token:
        token = session[SESSION_KEY] = secrets.token_urlsafe(32)
    return token


def new_token() -> str:
    """Replace the token (at login and logout)."""
    session[SESSION_KEY] = secrets.token_urlsafe(32)
    return str(session[SESSION_KEY])


def check_csrf() -> None:
    if request.method not in UNSAFE_METHODS:
        return
    if _foreign_origin():
        # anyone on the LAN can send these: INFO, not a warning per request (journal, logs page)
        logger.info(
            "rejected %s %s from origin %s", request.method, request.path, request.headers["Origin"]
        )
        abort(400, description=REJECTED)
    expected = session.get(SESSION_KEY)
    sent = request.headers.get(HEADER) or request.form.get(FIELD)
    if not isinstance(expected, str) or not sent or not _same(expected, sent):
        logger.info("rejected %s %s: missing or wrong CSRF token", request.method, request.path)
        abort(400, description=REJECTED)


def _foreign_origin() -> bool:
    origin = request.headers.get("Origin", "").strip()
    if not origin or origin == "null":
        return False
    hosts = allowed_hosts(web_context().config.allowed_hosts)
    return not hosts.allows_origin(origin, request.host, request.scheme)


def _same(expected: str, sent: str) -> bool:
    return hmac.compare_digest(expected.encode("utf-8"), sent.encode("utf-8", "replace"))


def init_app(app: Flask) -> None:
    app.jinja_env.globals["csrf_token"] = csrf_token
    app.before_request(check_csrf)
