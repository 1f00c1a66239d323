"""The dashboard: live figures (refreshed by static/dashboard.js from /api/status), and the
swapping switch: off always works, saved or not (the page says when it could not be
saved); on is refused when it cannot be saved (a read-only or full data folder)."""

from __future__ import annotations

import logging

from flask import Blueprint, flash, jsonify, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from appliance.errors import OutputError
from web_ui.context import web_context
from web_ui.status import status

logger = logging.getLogger(__name__)

bp = Blueprint("dashboard", __name__)


@bp.get("/")
def index() -> ResponseReturnValue:
    return render_template("dashboard.html", s=status(web_context().control))


@bp.get("/api/status")
def api_status() -> ResponseReturnValue:
    return jsonify(status(web_context().control))


@bp.post("/swapping")
def swapping() -> ResponseReturnValue:
    sent = request.form.get("enabled")
    if sent not in ("true", "false"):
        flash("Swapping was not changed: the switch sends true or false.", "error")
        return redirect(url_for("dashboard.index"))
    try:
        result = web_context().control.set_swapping(sent == "true")
    except OutputError as exc:
        flash(f"Swapping was not turned on: {exc}.", "error")
        return redirect(url_for("dashboard.index"))
    flash(result.message(), "error" if result.not_saved else "ok")
    return redirect(url_for("dashboard.index"))
