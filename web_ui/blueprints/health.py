"""``/healthz`` (no login, no secrets) and ``/metrics`` (Prometheus text format)."""

from __future__ import annotations

import logging

from flask import Blueprint, Response, jsonify
from flask.typing import ResponseReturnValue

from web_ui.context import web_context
from web_ui.metrics import CONTENT_TYPE, render_metrics
from web_ui.status import health, health_notes, health_reason

logger = logging.getLogger(__name__)

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> ResponseReturnValue:
    """200 ``{"status": "ok"}`` or 503 ``"degraded"`` with the ``reason`` (the pipeline
    stopped, the camera or the screen missing); ``degraded`` lists what runs worse without
    making the mirror unhealthy (the CPU instead of the accelerator), when there is any."""
    snap = web_context().control.snapshot()
    state = health(snap)
    body: dict[str, object] = {"status": state, "running": snap.running}
    if state != "ok":
        body["reason"] = health_reason(snap)
    notes = health_notes(snap)
    if notes:
        body["degraded"] = notes
    return jsonify(body), 200 if state == "ok" else 503


@bp.get("/metrics")
def metrics() -> ResponseReturnValue:
    body = render_metrics(web_context().control.snapshot())
    return Response(body, headers={"Content-Type": CONTENT_TYPE})
