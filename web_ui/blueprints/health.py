"""``/healthz`` (no login, no secrets) and ``/metrics`` (Prometheus text format)."""

from __future__ import annotations

import logging

from flask import Blueprint, Response, jsonify
from flask.typing import ResponseReturnValue

from web_ui.context import web_context
from web_ui.metrics import CONTENT_TYPE, render_metrics
from web_ui.status import health, health_reason

logger = logging.getLogger(__name__)

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> ResponseReturnValue:
    snap = web_context().control.snapshot()
    state = health(snap)
    if state == "ok":
        return jsonify(status=state, running=snap.running), 200
    return jsonify(status=state, running=snap.running, reason=health_reason(snap)), 503


@bp.get("/metrics")
def metrics() -> ResponseReturnValue:
    body = render_metrics(web_context().control.snapshot())
    return Response(body, headers={"Content-Type": CONTENT_TYPE})
