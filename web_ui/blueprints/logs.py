"""Recent warnings and errors, newest first."""

from __future__ import annotations

import logging

from flask import Blueprint, render_template
from flask.typing import ResponseReturnValue

from web_ui.context import web_context

logger = logging.getLogger(__name__)

bp = Blueprint("logs", __name__)


@bp.get("/logs")
def index() -> ResponseReturnValue:
    return render_template("logs.html", entries=web_context().control.recent_logs())
