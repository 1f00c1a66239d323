"""The live preview: the labelled output as MJPEG, and as a single JPEG, for logged-in staff.

Each open stream holds a server thread, so at most ``max_preview_clients``
stream at once (``web_ui.preview_slots``: a client that stops reading loses its
slot after ``preview_stall_s``); a stream ends when the pipeline stops, the
server shuts down or its client goes away.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator

from flask import Blueprint, Response, abort, render_template, request
from flask.typing import ResponseReturnValue

from web_ui.context import WebContext, web_context
from web_ui.preview_slots import PreviewSlot

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
    addr, port = request.environ.get("REMOTE_ADDR", "?"), request.environ.get("REMOTE_PORT")
    disconnect = None
    if ctx.close_connection is not None and port and str(port).isdigit():
        disconnect = functools.partial(ctx.close_connection, addr, int(port))
    slot = ctx.preview.acquire(f"{addr}:{port}", disconnect)
    if slot is None:
        abort(503, description=BUSY)
    response = Response(
        _parts(ctx, slot),
        mimetype=f"multipart/x-mixed-replace; boundary={BOUNDARY}",
        headers={"X-Accel-Buffering": "no"},
    )
    response.call_on_close(slot.release)
    return response


def _parts(ctx: WebContext, slot: PreviewSlot) -> Iterator[bytes]:
    """The latest frame at once, then each newer one, until the pipeline or the server stops
    or the slot is taken back."""
    sent = 0
    latest = ctx.control.preview_jpeg()
    if latest is not None:
        sent, data = latest
        yield _part(data)
        slot.sent()
    while not ctx.stopping.is_set() and not slot.stalled:
        slot.touch()
        ctx.preview.reap()
        seq = ctx.control.wait_preview(sent, WAIT_S)
        if seq is None:
            return
        latest = ctx.control.preview_jpeg() if seq > sent else None
        if latest is None:
            continue
        sent, data = latest
        yield _part(data)
        slot.sent()


def _part(data: bytes) -> bytes:
    head = f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(data)}\r\n\r\n"
    return head.encode("ascii") + data + b"\r\n"
