"""``mirror run``'s admin UI: the ``web_ui`` package served over the session's control core.

The CLI is the only part of ``appliance`` that knows ``web_ui``: the session
gets this function as its ``WebStarter`` and never imports the web layer.
"""

from __future__ import annotations

from collections.abc import Callable

from appliance.control.api import MirrorControl, WebServer
from web_ui.app import create_app
from web_ui.config import load_web_config
from web_ui.server import serve


def start_admin_ui(control: MirrorControl, announce: Callable[[str], None] | None) -> WebServer:
    """Serve the admin UI where ``web.yaml`` says (a bad file raises ``WebConfigError``)."""
    web = load_web_config()
    if announce is None:
        app = create_app(control, config=web)
    else:
        app = create_app(control, config=web, announce=announce)
    return serve(app, web.host, web.port, web.threads)
