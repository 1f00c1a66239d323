"""Identities: upload a source photo (checked, previewed), rename, delete, make active."""

from __future__ import annotations

import logging

from flask import (
    Blueprint,
    Response,
    abort,
    flash,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask.typing import ResponseReturnValue

from appliance.control.identities import NAME_RULE
from appliance.control.uploads import MAX_UPLOAD_BYTES
from appliance.errors import (
    IdentityError,
    IdentityNotFoundError,
    MirrorError,
    OutputError,
    UploadError,
)
from web_ui.context import web_context

logger = logging.getLogger(__name__)

bp = Blueprint("identities", __name__)

NO_FILE = "Choose a photo to upload."
HINTS_KEY = "identity_hints"  # the last upload's hints, shown once beside its preview


def _page(
    errors: dict[str, str] | None = None, name: str = "", status: int = 200
) -> ResponseReturnValue:
    control = web_context().control
    shown = session.pop(HINTS_KEY, None)
    hints: list[str] = []
    if isinstance(shown, dict) and shown.get("name") == request.args.get("added"):
        hints = [str(h) for h in shown.get("hints", [])]
    page = render_template(
        "identities.html",
        names=control.identities.names(),
        active=control.active_identity(),
        errors=errors or {},
        name=name,
        name_rule=NAME_RULE,
        max_mb=MAX_UPLOAD_BYTES // 2**20,
        hints=hints,
    )
    return page, status


def _refused(exc: MirrorError, field: str = "general") -> ResponseReturnValue:
    status = 404 if isinstance(exc, IdentityNotFoundError) else 400
    message = str(exc)
    return _page({field: message[:1].upper() + message[1:]}, status=status)


@bp.get("/identities")
def index() -> ResponseReturnValue:
    return _page()


@bp.post("/identities")
def upload() -> ResponseReturnValue:
    name = request.form.get("name", "").strip()
    photo = request.files.get("photo")
    if photo is None or not photo.filename:
        return _page({"photo": NO_FILE}, name, 400)
    data = photo.stream.read(MAX_UPLOAD_BYTES + 1)
    try:
        hints = web_context().control.add_identity(name, data, photo.filename, photo.mimetype or "")
    except IdentityError as exc:
        return _page({"name": _sentence(exc)}, name, 400)
    except UploadError as exc:
        return _page({"photo": _sentence(exc)}, name, 400)
    except OutputError as exc:
        return _page({"general": _sentence(exc)}, name, 500)
    if hints:
        session[HINTS_KEY] = {"name": name, "hints": [_sentence_text(h) for h in hints]}
        flash(f"Added {name}: usable; a better photo would look more natural (see below).", "ok")
    else:
        flash(f"Added {name}: a good photo; this is how it looks on the demo faces.", "ok")
    return redirect(url_for("identities.index", added=name) + "#added")


@bp.get("/identities/<name>/preview.jpg")
def preview(name: str) -> ResponseReturnValue:
    try:
        data = web_context().control.identities.preview(name)
    except IdentityError:
        abort(404)
    if data is None:
        abort(404)
    return Response(data, mimetype="image/jpeg")


@bp.get("/identities/<name>/photo.jpg")
def photo(name: str) -> ResponseReturnValue:
    try:
        data = web_context().control.identities.photo(name)
    except IdentityError:
        abort(404)
    return Response(data, mimetype="image/jpeg")


@bp.post("/identities/<name>/rename")
def rename(name: str) -> ResponseReturnValue:
    new = request.form.get("new_name", "").strip()
    try:
        web_context().control.rename_identity(name, new)
    except IdentityError as exc:
        return _refused(exc)
    flash(f"Renamed {name} to {new}.", "ok")
    return redirect(url_for("identities.index"))


@bp.post("/identities/<name>/activate")
def activate(name: str) -> ResponseReturnValue:
    try:
        web_context().control.set_active_identity(name)
    except (IdentityError, UploadError) as exc:
        return _refused(exc)
    flash(f"{name} is now the active identity.", "ok")
    return redirect(url_for("identities.index"))


@bp.post("/identities/<name>/delete")
def delete(name: str) -> ResponseReturnValue:
    try:
        web_context().control.delete_identity(name)
    except IdentityError as exc:
        return _refused(exc)
    flash(f"Deleted {name}.", "ok")
    return redirect(url_for("identities.index"))


def _sentence(exc: MirrorError) -> str:
    return _sentence_text(str(exc))


def _sentence_text(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")
