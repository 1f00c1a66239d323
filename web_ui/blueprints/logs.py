"""Recent security events (logins, wrong passwords, lock-outs) and, apart, warnings and errors.

Both newest first; security events come from a ring of their own, so a flood
of other warnings never pushes them off this page.
"""

from __future__ import annotations

import logging

from flask import Blueprint, render_template
from flask.typing import ResponseReturnValue

from web_ui.context import web_context

logger = logging.getLogger(__name__)

bp = Blueprint("logs", __name__)


@bp.get("/logs")
def index() -> ResponseReturnValue:
    entries = web_context().control.recent_logs()
    security = [entry for entry in entries if entry.security]
    others = [entry for entry in entries if not entry.security]
    return render_template("logs.html", security=security, entries=others)
