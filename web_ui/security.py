"""Login required by default, forced password change, security headers, cookie flags.

Every endpoint needs a logged-in session except those in ``PUBLIC``; while the
password must still be changed only ``WHILE_MUST_CHANGE`` are reachable. A
session is valid while its login id is open on the server (``web_ui.sessions``:
logging out and password changes close it) and its account ``generation`` is
current (a password change ends every other login, across restarts too).
Session cookies are HttpOnly, SameSite=Lax, and Secure whenever the request
came over HTTPS.
"""

from __future__ import annotations

import logging

from flask import Flask, Request, Response, jsonify, redirect, request, session, url_for
from flask.sessions import SecureCookieSessionInterface
from flask.typing import ResponseReturnValue

from web_ui.context import web_context

logger = logging.getLogger(__name__)

PUBLIC = frozenset({"auth.login", "health.healthz", "health.metrics", "static"})
WHILE_MUST_CHANGE = frozenset({"auth.password", "auth.logout", "static"})
CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; "
    "object-src 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}


class HttpsAwareSessionInterface(SecureCookieSessionInterface):
    """The session cookie gets ``Secure`` when the request came over HTTPS."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return bool(app.config["SESSION_COOKIE_SECURE"]) or request.is_secure


def logged_in() -> bool:
    ctx = web_context()
    account = ctx.auth.account()
    return (
        session.get("user") == account.username
        and session.get("gen") == account.generation
        and ctx.sessions.alive(session.get("sid"))
    )


def _wants_json(req: Request) -> bool:
    return req.path.startswith("/api/") or req.accept_mimetypes.best == "application/json"


def require_login() -> ResponseReturnValue | None:
    endpoint = request.endpoint or ""
    if endpoint in PUBLIC:
        return None
    if not logged_in():
        session.pop("user", None)
        if _wants_json(request):
            return _json_error("log in first", 401)
        return redirect(url_for("auth.login"))
    if web_context().auth.account().must_change and endpoint not in WHILE_MUST_CHANGE:
        if _wants_json(request):
            return _json_error("change the password first", 403)
        return redirect(url_for("auth.password"))
    return None


def _json_error(message: str, status: int) -> Response:
    response = jsonify(error=message)
    response.status_code = status
    return response


def add_headers(response: Response) -> Response:
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    if request.endpoint != "static":
        response.headers.setdefault("Cache-Control", "no-store")
    return response


def init_app(app: Flask) -> None:
    app.session_interface = HttpsAwareSessionInterface()
    app.before_request(require_login)
    app.after_request(add_headers)
