"""Settings: the form built from the model, checked field by field, applied without a restart.

A bad value re-shows the form with the message beside that field and changes
nothing (the file, the running pipeline); a good one is saved atomically and
applied between frames, and the page says what only applies at the next start.

The form carries the ``version`` of what it shows (``SettingsView``): a save
applies only the fields this page changed, over what others saved since it was
opened (``appliance.control.edits``). A field both changed differently is a
conflict: 409, nothing saved, the form re-shown with the settings in force and
this page's changes, each conflict named. A POST without a version (a script)
changes the fields it sends. Only the changed keys reach ``config.yaml``.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from appliance.config import Settings
from appliance.control.api import MirrorControl, SettingsView
from appliance.control.live_apply import changed_keys, flatten
from appliance.errors import (
    ConfigError,
    IdentityError,
    OutputError,
    SettingsConflictError,
    UploadError,
)
from web_ui.context import web_context
from web_ui.settings_form import FORM_ERROR, as_text, build_sections, field_keys, parse_form

logger = logging.getLogger(__name__)

bp = Blueprint("settings", __name__)

IDENTITY_FIELD = "active_identity"
SWAPPING_FIELD = "swapping"
VERSION_FIELD = "version"


def _current(control: MirrorControl) -> SettingsView:
    view = control.settings_view()
    assert view is not None  # the current view is always known
    return view


def _page(
    control: MirrorControl,
    view: SettingsView | None = None,
    submitted: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
    status: int = 200,
    *,
    conflicts: tuple[str, ...] = (),
) -> ResponseReturnValue:
    """The form for ``view`` (default: the settings in force), ``submitted`` values over it."""
    view = view or _current(control)
    errors = errors or {}
    keys = field_keys(view.settings) | {IDENTITY_FIELD, SWAPPING_FIELD}
    loose = {key: msg for key, msg in errors.items() if key not in keys}
    submitted = submitted or {}
    page = render_template(
        "settings.html",
        sections=build_sections(view.settings, control.applies_live, submitted, errors),
        errors=errors,
        loose_errors=loose,
        form_error_key=FORM_ERROR,
        identities=control.identities.names(),
        active=submitted.get(IDENTITY_FIELD, view.identity or ""),
        swapping=submitted.get(SWAPPING_FIELD, as_text(view.swapping)),
        version=view.version,
        conflicts=conflicts,
    )
    return page, status


@bp.get("/settings")
def index() -> ResponseReturnValue:
    return _page(web_context().control)


@bp.post("/settings")
def save() -> ResponseReturnValue:
    control = web_context().control
    form = request.form.to_dict(flat=False)
    version = (form.get(VERSION_FIELD) or [""])[-1] or None
    base = control.settings_view(version)  # None: older than the views kept
    reference = base or _current(control)
    new, errors, submitted = parse_form(reference.settings, form)
    identity, swapping = _mirror_fields(control, reference, form, errors, submitted)
    if new is None or errors:
        return _page(control, reference, submitted, errors, 400)
    try:
        result = control.apply_settings(new, identity=identity, swapping=swapping, base=version)
    except SettingsConflictError as exc:
        logger.info("settings not saved, edited on an older page: %s", "; ".join(exc.conflicts))
        return _conflict(control, exc, reference, new, identity=identity, swapping=swapping)
    except (IdentityError, UploadError) as exc:
        return _page(control, reference, submitted, {IDENTITY_FIELD: str(exc)}, 400)
    except (ConfigError, OutputError) as exc:
        return _page(control, reference, submitted, {FORM_ERROR: str(exc)}, 400)
    flash(result.message(), "ok")
    return redirect(url_for("settings.index"))


def _conflict(
    control: MirrorControl,
    exc: SettingsConflictError,
    reference: SettingsView,
    new: Settings,
    *,
    identity: str | None,
    swapping: bool | None,
) -> ResponseReturnValue:
    """409: the settings in force, with this page's changes over them when they could be
    told apart (else listed), and each conflict named."""
    yours = _yours(reference, new, identity, swapping)
    if exc.conflicts:
        return _page(control, None, yours, {FORM_ERROR: str(exc)}, 409, conflicts=exc.conflicts)
    listed = tuple(f"{key}: yours {value!r}" for key, value in yours.items())
    return _page(control, None, {}, {FORM_ERROR: str(exc)}, 409, conflicts=listed)


def _yours(
    reference: SettingsView, new: Settings, identity: str | None, swapping: bool | None
) -> dict[str, str]:
    """What the page changed against ``reference``, as form values."""
    values = flatten(new.model_dump(mode="json"))
    yours = {key: as_text(values[key]) for key in changed_keys(reference.settings, new)}
    if identity is not None and identity != reference.identity:
        yours[IDENTITY_FIELD] = identity
    if swapping is not None and swapping != reference.swapping:
        yours[SWAPPING_FIELD] = as_text(swapping)
    return yours


def _mirror_fields(
    control: MirrorControl,
    reference: SettingsView,
    form: dict[str, list[str]],
    errors: dict[str, str],
    submitted: dict[str, Any],
) -> tuple[str | None, bool | None]:
    """The identity (None: as on the page it was made from) and swapping switch (None: not
    sent) from the form."""
    swapping = None
    if form.get(SWAPPING_FIELD):
        submitted[SWAPPING_FIELD] = form[SWAPPING_FIELD][-1]
        if submitted[SWAPPING_FIELD] in ("true", "false"):
            swapping = submitted[SWAPPING_FIELD] == "true"
        else:
            errors[SWAPPING_FIELD] = "tick or untick the box"
    identity = None
    chosen = (form.get(IDENTITY_FIELD) or [""])[-1]
    if chosen and chosen != reference.identity:
        submitted[IDENTITY_FIELD] = chosen
        if chosen in control.identities.names():
            identity = chosen
        else:
            errors[IDENTITY_FIELD] = "There is no identity of that name: pick one from the list."
    return identity, swapping
