"""``mirror run``'s admin UI: the ``web_ui`` package served over the session's control core.

The CLI is the only part of ``appliance`` that knows ``web_ui``: the session
gets this function as its ``WebStarter`` and never imports the web layer. The
page is served over HTTPS with the device's own certificate (made at the
first start, ``appliance.device.certificate``) unless ``web.yaml`` says
``tls: false``.
"""

from __future__ import annotations

from collections.abc import Callable

from appliance.control.api import MirrorControl, WebServer
from appliance.device.certificate import ensure_certificate
from appliance.paths import web_dir
from web_ui.app import create_app
from web_ui.config import load_web_config
from web_ui.server import serve


def start_admin_ui(control: MirrorControl, announce: Callable[[str], None] | None) -> WebServer:
    """Serve the admin UI where ``web.yaml`` says (a bad file raises ``WebConfigError``)."""
    web = load_web_config()
    tls = ensure_certificate(web_dir(), [web.host]).server_context() if web.tls else None
    if announce is None:
        app = create_app(control, config=web)
    else:
        app = create_app(control, config=web, announce=announce)
    return serve(app, web.host, web.port, web.threads, tls=tls)
