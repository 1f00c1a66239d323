"""Settings: the form built from the model, checked field by field, applied without a restart.

A bad value re-shows the form with the message beside that field and changes
nothing (the file, the running pipeline); a good one is saved atomically and
applied between frames, and the page says what only applies at the next start.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from appliance.control.api import MirrorControl
from appliance.errors import ConfigError, IdentityError, OutputError, UploadError
from web_ui.context import web_context
from web_ui.settings_form import FORM_ERROR, build_sections, field_keys, parse_form

logger = logging.getLogger(__name__)

bp = Blueprint("settings", __name__)

IDENTITY_FIELD = "active_identity"
SWAPPING_FIELD = "swapping"


def _page(
    control: MirrorControl,
    submitted: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
    status: int = 200,
) -> ResponseReturnValue:
    settings = control.settings()
    errors = errors or {}
    keys = field_keys(settings) | {IDENTITY_FIELD, SWAPPING_FIELD}
    loose = {key: msg for key, msg in errors.items() if key not in keys}
    submitted = submitted or {}
    page = render_template(
        "settings.html",
        sections=build_sections(settings, control.applies_live, submitted, errors),
        errors=errors,
        loose_errors=loose,
        form_error_key=FORM_ERROR,
        identities=control.identities.names(),
        active=submitted.get(IDENTITY_FIELD, control.active_identity() or ""),
        swapping=submitted.get(SWAPPING_FIELD, "true" if control.swapping_enabled else "false"),
    )
    return page, status


@bp.get("/settings")
def index() -> ResponseReturnValue:
    return _page(web_context().control)


@bp.post("/settings")
def save() -> ResponseReturnValue:
    control = web_context().control
    form = request.form.to_dict(flat=False)
    new, errors, submitted = parse_form(control.settings(), form)
    identity, swapping = _mirror_fields(control, form, errors, submitted)
    if new is None or errors:
        return _page(control, submitted, errors, 400)
    try:
        result = control.apply_settings(new, identity=identity, swapping=swapping)
    except (IdentityError, UploadError) as exc:
        return _page(control, submitted, {IDENTITY_FIELD: str(exc)}, 400)
    except (ConfigError, OutputError) as exc:
        return _page(control, submitted, {FORM_ERROR: str(exc)}, 400)
    flash(result.message(), "ok")
    return redirect(url_for("settings.index"))


def _mirror_fields(
    control: MirrorControl,
    form: dict[str, list[str]],
    errors: dict[str, str],
    submitted: dict[str, Any],
) -> tuple[str | None, bool | None]:
    """The identity (None: unchanged) and swapping switch (None: not sent) from the form."""
    swapping = None
    if form.get(SWAPPING_FIELD):
        submitted[SWAPPING_FIELD] = form[SWAPPING_FIELD][-1]
        if submitted[SWAPPING_FIELD] in ("true", "false"):
            swapping = submitted[SWAPPING_FIELD] == "true"
        else:
            errors[SWAPPING_FIELD] = "tick or untick the box"
    identity = None
    chosen = (form.get(IDENTITY_FIELD) or [""])[-1]
    if chosen and chosen != control.active_identity():
        submitted[IDENTITY_FIELD] = chosen
        if chosen in control.identities.names():
            identity = chosen
        else:
            errors[IDENTITY_FIELD] = "There is no identity of that name: pick one from the list."
    return identity, swapping
