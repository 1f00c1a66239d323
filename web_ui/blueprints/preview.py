"""The live preview: the labelled output as MJPEG, and as a single JPEG, for logged-in staff.

Each open stream holds a server thread, so at most ``max_preview_clients``
stream at once; a stream ends when the pipeline stops or the server shuts down.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from flask import Blueprint, Response, abort, render_template
from flask.typing import ResponseReturnValue

from web_ui.context import WebContext, web_context

logger = logging.getLogger(__name__)

bp = Blueprint("preview", __name__)

BOUNDARY = "frame"
WAIT_S = 0.5
BUSY = "Too many live previews are open: close one (on another phone or tab) and reload."
NO_FRAME = "No picture yet: the mirror is starting or stopped. Reload in a moment."


@bp.get("/preview")
def page() -> ResponseReturnValue:
    return render_template("preview.html")


@bp.get("/preview.jpg")
def frame() -> ResponseReturnValue:
    latest = web_context().control.preview_jpeg()
    if latest is None:
        abort(503, description=NO_FRAME)
    return Response(latest[1], mimetype="image/jpeg")


@bp.get("/preview.mjpg")
def stream() -> ResponseReturnValue:
    ctx = web_context()
    with ctx.preview_lock:
        if ctx.preview_clients >= ctx.config.max_preview_clients:
            abort(503, description=BUSY)
        ctx.preview_clients += 1
    response = Response(
        _parts(ctx),
        mimetype=f"multipart/x-mixed-replace; boundary={BOUNDARY}",
        headers={"X-Accel-Buffering": "no"},
    )
    response.call_on_close(_Release(ctx))
    return response


class _Release:
    """Frees the stream's client slot once, when the server closes the response."""

    def __init__(self, ctx: WebContext) -> None:
        self.ctx = ctx
        self.done = False

    def __call__(self) -> None:
        with self.ctx.preview_lock:
            if not self.done:
                self.done = True
                self.ctx.preview_clients -= 1


def _parts(ctx: WebContext) -> Iterator[bytes]:
    """The latest frame at once, then each newer one, until the pipeline or the server stops."""
    sent = 0
    latest = ctx.control.preview_jpeg()
    if latest is not None:
        sent, data = latest
        yield _part(data)
    while not ctx.stopping.is_set():
        seq = ctx.control.wait_preview(sent, WAIT_S)
        if seq is None:
            return
        latest = ctx.control.preview_jpeg() if seq > sent else None
        if latest is None:
            continue
        sent, data = latest
        yield _part(data)


def _part(data: bytes) -> bytes:
    head = f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(data)}\r\n\r\n"
    return head.encode("ascii") + data + b"\r\n"
