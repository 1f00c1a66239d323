"""``/healthz`` (no login, no secrets) and ``/metrics`` (Prometheus text format, with the
scrape token of :mod:`web_ui.scrape_token` or a staff login)."""

from __future__ import annotations

import logging

from flask import Blueprint, Response, current_app, jsonify
from flask.typing import ResponseReturnValue

from appliance.device.build import PROC_CMDLINE, build_info
from appliance.paths import data_dir
from appliance.updates.queue import read_status
from web_ui.context import web_context
from web_ui.fleet_metrics import fleet_families
from web_ui.metrics import CONTENT_TYPE, render_metrics
from web_ui.scrape_token import scrape_refusal
from web_ui.slots_cache import slots_cache
from web_ui.status import health, health_notes, health_reason, safe_mode_problem
from web_ui.update_metrics import update_families

logger = logging.getLogger(__name__)

bp = Blueprint("health", __name__)
CMDLINE_KEY = "KERNEL_CMDLINE"  # app.config: where the booted A/B slot is read (tests)


@bp.get("/healthz")
def healthz() -> ResponseReturnValue:
    """200 ``{"status": "ok"}`` or 503 ``"degraded"`` with the ``reason`` (the pipeline
    stopped, the camera or the screen missing); ``degraded`` lists what runs worse without
    making the mirror unhealthy (the CPU instead of the accelerator, safe mode), when there
    is any. In safe mode (the settings file could not be used: the defaults run, the
    visitors see a working mirror) ``safe_mode`` says why, and the status stays "ok"."""
    snap = web_context().control.snapshot()
    state = health(snap)
    body: dict[str, object] = {"status": state, "running": snap.running}
    if state != "ok":
        body["reason"] = health_reason(snap)
    notes = health_notes(snap)
    if notes:
        body["degraded"] = notes
    safe_mode = safe_mode_problem(snap)
    if safe_mode:
        body["safe_mode"] = safe_mode
    return jsonify(body), 200 if state == "ok" else 503


@bp.get("/metrics")
def metrics() -> ResponseReturnValue:
    """The telemetry for Prometheus, only with the scrape token (or a staff login)."""
    refused = scrape_refusal()  # it tells whether someone stands in front of the mirror
    if refused is not None:
        return refused
    snap = web_context().control.snapshot()
    build = build_info(current_app.config.get(CMDLINE_KEY, PROC_CMDLINE))
    # the update's status file is small and read as it is; RAUC only through its cache
    updates = update_families(read_status(data_dir()), slots_cache(current_app).current())
    body = render_metrics(snap, [*fleet_families(snap, build), *updates])
    return Response(body, headers={"Content-Type": CONTENT_TYPE})
