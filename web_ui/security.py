"""Login required by default, forced password change, security headers, cookie flags.

Every endpoint needs a logged-in session except those in ``PUBLIC``; while the
password must still be changed only ``WHILE_MUST_CHANGE`` are reachable. A
session is valid while its login id is open on the server (``web_ui.sessions``:
logging out and password changes close it) and its account ``generation`` is
current (a password change ends every other login, across restarts too).
Session cookies are HttpOnly, SameSite=Lax, and Secure whenever the request
came over HTTPS. Before anything else, a request whose ``Host`` is not one of
the device's own names or addresses is refused (``web_ui.hosts``: DNS
rebinding), and while the server serves HTTPS a plain HTTP request is only
redirected to the same address over HTTPS.
"""

from __future__ import annotations

import logging

from flask import Flask, Request, Response, abort, jsonify, redirect, request, session, url_for
from flask.sessions import SecureCookieSessionInterface
from flask.typing import ResponseReturnValue

from web_ui.context import web_context
from web_ui.hosts import allowed_hosts

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


def foreign_host_message(host: str) -> str:
    return (
        f"This page was asked for as {host[:100]!r}, which is not this mirror's name or "
        "address: open the admin page by the mirror's address (on its screen), or add the "
        "name to allowed_hosts in web.yaml."
    )


def check_host() -> ResponseReturnValue | None:
    """Refuse a ``Host`` that is not the device's (400); redirect plain HTTP to HTTPS."""
    host = request.environ.get("HTTP_HOST")
    ctx = web_context()
    if host is not None and not allowed_hosts(ctx.config.allowed_hosts).allows(host):
        # INFO, not a warning: anyone on the LAN can send these, and the page's ring of
        # warnings should keep the mirror's own
        logger.info("refused %s %s for host %r", request.method, request.path, host[:100])
        abort(400, description=foreign_host_message(host))
    if ctx.https_only and not request.is_secure:
        return redirect(request.url.replace("http://", "https://", 1), 308)
    return None


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
    # first of all: before the CSRF check and the login
    app.before_request_funcs.setdefault(None, []).insert(0, check_host)
    app.before_request(require_login)
    app.after_request(add_headers)
