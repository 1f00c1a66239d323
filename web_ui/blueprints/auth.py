"""Log in (rate-limited), log out, and change the password (forced at the first login).

The login and the password form share one lock-out per client address
(whatever user name it tries), its IPv6 /64's, and the slow-down
(``web_ui.ratelimit``). Logins, wrong passwords and password changes are
security events (``web_ui.audit``). Logging out closes the login on the
server; a password change closes every other one.
"""

from __future__ import annotations

import logging

from flask import Blueprint, flash, redirect, render_template, request, session, url_for
from flask.typing import ResponseReturnValue

from web_ui import audit
from web_ui.client_keys import ClientKey, client_of
from web_ui.context import web_context
from web_ui.csrf import new_token
from web_ui.errors import PasswordError, WrongPasswordError
from web_ui.security import logged_in

logger = logging.getLogger(__name__)

bp = Blueprint("auth", __name__)

WRONG = "Wrong user name or password."
LOCKED = "Too many attempts; try again in {seconds} s."


def _client() -> ClientKey:
    return client_of(request.remote_addr)


def _locked(seconds: int, username: str) -> ResponseReturnValue:
    message = LOCKED.format(seconds=seconds)
    page = render_template("login.html", error=message, username=username)
    return page, 429, {"Retry-After": str(seconds)}


def _password_locked(seconds: int, forced: bool) -> ResponseReturnValue:
    errors = {"current": LOCKED.format(seconds=seconds)}
    page = render_template("password.html", errors=errors, forced=forced)
    return page, 429, {"Retry-After": str(seconds)}


@bp.route("/login", methods=["GET", "POST"])
def login() -> ResponseReturnValue:
    if request.method == "GET":
        if logged_in():
            return redirect(url_for("dashboard.index"))
        return render_template("login.html", error=None, username="")
    return _attempt()


def _attempt() -> ResponseReturnValue:
    ctx = web_context()
    username = request.form.get("username", "").strip()
    password = request.form.get("password", "")
    client = _client()
    wait_s = ctx.limiter.attempt(client)
    if wait_s:
        return _locked(wait_s, username)
    if not ctx.auth.verify(username, password):
        audit.warning("failed admin login from %s", request.remote_addr)
        wait_s = ctx.limiter.locked_for(client)
        if wait_s:
            return _locked(wait_s, username)
        return render_template("login.html", error=WRONG, username=username), 401
    ctx.limiter.logged_in(client)
    return _logged_in()


def _logged_in() -> ResponseReturnValue:
    account = web_context().auth.account()
    session.clear()
    session.permanent = True
    session["user"] = account.username
    session["gen"] = account.generation
    session["sid"] = web_context().sessions.open()
    new_token()
    audit.info("admin logged in from %s", request.remote_addr)
    if account.must_change:
        flash("Choose your own password before going on.", "info")
        return redirect(url_for("auth.password"))
    return redirect(url_for("dashboard.index"))


@bp.post("/logout")
def logout() -> ResponseReturnValue:
    web_context().sessions.close(session.get("sid"))
    session.clear()
    new_token()
    flash("Logged out.", "info")
    return redirect(url_for("auth.login"))


@bp.route("/password", methods=["GET", "POST"])
def password() -> ResponseReturnValue:
    ctx = web_context()
    forced = ctx.auth.account().must_change
    if request.method == "GET":
        return render_template("password.html", errors={}, forced=forced)
    current = request.form.get("current", "")
    new = request.form.get("new", "")
    errors: dict[str, str] = {}
    if new != request.form.get("confirm", ""):
        errors["confirm"] = "The two new passwords are not the same."
        return render_template("password.html", errors=errors, forced=forced), 400
    client = _client()
    wait_s = ctx.limiter.attempt(client)
    if wait_s:
        return _password_locked(wait_s, forced)
    try:
        account = ctx.auth.change(current, new)
    except WrongPasswordError as exc:
        audit.warning("wrong current password on the password form from %s", request.remote_addr)
        wait_s = ctx.limiter.locked_for(client)
        if wait_s:
            return _password_locked(wait_s, forced)
        errors["current"] = str(exc).capitalize() + "."
    except PasswordError as exc:  # the current one was right: a bad new one is no guess
        ctx.limiter.right_password(client)
        errors["new"] = str(exc).capitalize() + "."
    if errors:
        return render_template("password.html", errors=errors, forced=forced), 400
    ctx.limiter.logged_in(client)
    closed = ctx.sessions.close_all()
    audit.info(
        "password changed from %s: %s login(s) closed, this one reopened",
        request.remote_addr,
        closed,
    )
    session["gen"] = account.generation
    session["sid"] = ctx.sessions.open()
    flash("Password changed.", "ok")
    return redirect(url_for("dashboard.index"))
