"""Software update: both A/B slots, a bundle uploaded in slices or a URL, the progress.

Staff only, with the CSRF token, like every page. The web app cannot install: it leaves
the bundle (``web_ui.bundle_upload``, slice by slice under the small request body
limit) or the URL for the root-run installer (``appliance.updates.queue``) and shows the
progress that one writes, which ``static/updates.js`` polls from ``/updates/status``.
The slots are RAUC's (``appliance.updates.slots``); a mirror installed without the A/B
image has none, and the page says how to update it instead. Each request, upload and
cancel is a security event (``web_ui.audit``).
"""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import urllib.parse
from pathlib import Path
from typing import Any

from flask import (
    Blueprint,
    current_app,
    flash,
    jsonify,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask.blueprints import BlueprintSetupState
from flask.typing import ResponseReturnValue

from appliance.errors import InputError, MirrorError, OutputError
from appliance.updates.queue import UpdateStatus, read_status, request_install
from appliance.updates.recent import under_way
from appliance.updates.slots import SlotsStatus, UpdateUnavailableError, slots_status
from web_ui import audit
from web_ui.bundle_upload import MAX_BUNDLE_TEXT, SLICE_BYTES, BundleUploads, megabytes
from web_ui.errors import BundleUploadError

logger = logging.getLogger(__name__)

bp = Blueprint("updates", __name__)

UPLOADS_KEY = "face_mirror_updates"
DATA_DIR_KEY = "DATA_DIR"  # the app's config: <data dir> (its web/ and updates/ folders)
URL_MAX = 2048


@bp.record_once
def _set_up(state: BlueprintSetupState) -> None:
    """The app's upload slot; partial files of a run before are removed."""
    uploads = BundleUploads(Path(state.app.config[DATA_DIR_KEY]))
    uploads.clear()
    state.app.extensions[UPLOADS_KEY] = uploads


def _uploads() -> BundleUploads:
    uploads = current_app.extensions[UPLOADS_KEY]
    assert isinstance(uploads, BundleUploads)
    return uploads


def _data_dir() -> Path:
    return _uploads().data_dir


def _user() -> str:
    return str(session.get("user") or "?")


def _slots() -> tuple[SlotsStatus | None, str]:
    """RAUC's slots, or None and why there are none."""
    try:
        return slots_status(), ""
    except UpdateUnavailableError as exc:
        return None, str(exc)
    except (OSError, subprocess.SubprocessError) as exc:  # did not start, or did not answer
        return None, f"rauc status did not answer: {exc}"


def status_dict(status: UpdateStatus | None) -> dict[str, Any]:
    status = status or UpdateStatus("idle", "No update has been asked for.")
    return {**dataclasses.asdict(status), "busy": under_way(status)}


def _page(
    errors: dict[str, str] | None = None, url: str = "", status: int = 200
) -> ResponseReturnValue:
    slots, why = _slots()
    page = render_template(
        "updates.html",
        slots=slots,
        why=why,
        update=status_dict(read_status(_data_dir())),
        upload=_uploads().under_way(),
        errors=errors or {},
        url=url,
        slice_bytes=SLICE_BYTES,
        max_text=MAX_BUNDLE_TEXT,
        megabytes=megabytes,
    )
    return page, status


def _refused(exc: MirrorError) -> ResponseReturnValue:
    status = exc.status if isinstance(exc, BundleUploadError) else 500
    return jsonify(error=_sentence(str(exc))), status


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


@bp.get("/updates")
def index() -> ResponseReturnValue:
    return _page()


@bp.get("/updates/status")
def status() -> ResponseReturnValue:
    return jsonify(status_dict(read_status(_data_dir())))


@bp.post("/updates/uploads")
def start_upload() -> ResponseReturnValue:
    """Open an upload: ``name`` and ``size`` (bytes) as form fields; JSON with its URLs."""
    name = request.form.get("name", "")
    try:
        total = int(request.form.get("size", ""))
        upload = _uploads().start(name, total, _user())
    except ValueError as exc:  # BundleUploadError is one too
        if not isinstance(exc, BundleUploadError):
            exc = BundleUploadError("the upload must give the bundle's size in bytes")
        return _refused(exc)
    except OutputError as exc:
        return _refused(exc)
    urls = {
        action: url_for(f"updates.{action}_upload", upload_id=upload.id)
        for action in ("append", "finish", "abort")
    }
    return jsonify(id=upload.id, name=upload.name, slice_bytes=SLICE_BYTES, **urls), 201


@bp.post("/updates/uploads/<upload_id>")
def append_upload(upload_id: str) -> ResponseReturnValue:
    """One slice: the raw body, written at ``?offset=`` (where the last one ended)."""
    try:
        offset = int(request.args.get("offset", ""))
    except ValueError:
        return _refused(BundleUploadError("a slice must say its offset (?offset=BYTES)"))
    data = request.get_data(cache=False)  # at most the app's request body limit
    try:
        upload = _uploads().append(upload_id, offset, data)
    except (BundleUploadError, OutputError) as exc:
        return _refused(exc)
    return jsonify(received=upload.received, total=upload.total)


@bp.post("/updates/uploads/<upload_id>/finish")
def finish_upload(upload_id: str) -> ResponseReturnValue:
    try:
        wanted = _uploads().finish(upload_id)
    except (BundleUploadError, OutputError) as exc:
        return _refused(exc)
    name = Path(wanted.source).name
    audit.info("update bundle %s uploaded by %s from %s", name, _user(), request.remote_addr)
    message = f"{name} uploaded: the mirror checks its signature, then installs it."
    return jsonify(message=message)


@bp.post("/updates/uploads/<upload_id>/abort")
def abort_upload(upload_id: str) -> ResponseReturnValue:
    try:
        upload = _uploads().abort(upload_id)
    except BundleUploadError as exc:
        return _refused(exc)
    assert upload is not None
    logger.info("upload of %s cancelled by %s", upload.name, _user())
    return jsonify(message=f"The upload of {upload.name} was cancelled.")


@bp.post("/updates/uploads/cancel")
def cancel_upload() -> ResponseReturnValue:
    """Cancel whichever upload is under way (one left by another browser, say)."""
    upload = _uploads().abort()
    if upload is None:
        flash("No upload was under way.", "info")
    else:
        audit.info(
            "upload of %s by %s cancelled by %s from %s",
            upload.name,
            upload.user,
            _user(),
            request.remote_addr,
        )
        flash(f"The upload of {upload.name} was cancelled.", "ok")
    return redirect(url_for("updates.index"))


@bp.post("/updates/url")
def from_url() -> ResponseReturnValue:
    url = request.form.get("url", "").strip()
    problem = url_problem(url)
    if problem:
        return _page({"url": problem}, url, 400)
    try:
        request_install(_data_dir(), url, _user())
    except InputError as exc:  # an update is under way
        return _page({"url": _sentence(str(exc))}, url, 409)
    except OSError as exc:
        return _page({"url": _sentence(f"cannot leave the install request: {exc}")}, url, 500)
    audit.info("update from %s requested by %s from %s", url, _user(), request.remote_addr)
    flash(f"Install from {url} requested: the mirror downloads it, checks it, installs it.", "ok")
    return redirect(url_for("updates.index"))


def url_problem(url: str) -> str:
    """Why ``url`` is no bundle address, or ""."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        parts = urllib.parse.urlsplit("")
    if (
        len(url) > URL_MAX
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or any(ch.isspace() or not ch.isprintable() for ch in url)
    ):
        return (
            f"Give the bundle's address as http:// or https://HOST/PATH (at most {URL_MAX} "
            "characters, no spaces)."
        )
    return ""
