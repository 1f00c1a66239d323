"""Error pages: one clear sentence for each refusal, as HTML or (for /api/) as JSON."""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify, render_template, request
from werkzeug.exceptions import HTTPException, InternalServerError

from appliance.control.uploads import MAX_UPLOAD_BYTES

logger = logging.getLogger(__name__)

MESSAGES = {
    400: "The request was not understood.",
    404: "There is no such page.",
    405: "That is not allowed here.",
    413: f"The upload is too big: a photo may be at most {MAX_UPLOAD_BYTES // 2**20} MB.",
    429: "Too many requests; wait a moment and try again.",
    500: "Something went wrong; it has been logged. Try again, or restart the mirror.",
}


def _message(error: HTTPException) -> str:
    code = error.code or 500
    default = type(error).description
    if error.description and error.description != default and code != 413:
        return error.description
    return MESSAGES.get(code, error.name)


def render_error(error: HTTPException) -> tuple[Response | str, int]:
    code = error.code or 500
    message = _message(error)
    if request.path.startswith("/api/"):
        return jsonify(error=message), code
    return render_template("error.html", code=code, title=error.name, message=message), code


def _unexpected(error: Exception) -> tuple[Response | str, int]:
    logger.error("%s %s failed: %s", request.method, request.path, error, exc_info=error)
    return render_error(InternalServerError())


def init_app(app: Flask) -> None:
    app.register_error_handler(HTTPException, render_error)
    app.register_error_handler(Exception, _unexpected)
