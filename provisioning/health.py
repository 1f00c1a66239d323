"""Whether the mirror that runs now is healthy: the unit active and ``/healthz`` saying
``"status": "ok"``, asked on the device itself.

The admin page's address and scheme come from ``DATA_DIR/web/web.yaml``
(:func:`web_ui.config.load_web_config`): an address that listens everywhere is
asked on loopback. Over HTTPS the device's own certificate
(``DATA_DIR/web/tls-cert.pem``) is the only one trusted (a pin: the standard
library's ``ssl`` with that file as its sole CA, no name check, since the page
may be reached by any of the device's names).
"""

from __future__ import annotations

import http.client
import json
import logging
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from appliance.device.certificate import CERT_NAME
from provisioning.layout import Layout
from provisioning.service import UNIT_NAME, ServiceControl
from web_ui.config import load_web_config
from web_ui.errors import WebConfigError

logger = logging.getLogger(__name__)

ASK_TIMEOUT_S = 5.0
POLL_S = 1.0
SAY_EVERY_S = 10.0
MAX_BODY = 64 * 1024
WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1"}

Say = Callable[[str], None]


@dataclass(frozen=True)
class Health:
    ok: bool
    said: str  # "ok", or why not (the unit inactive, no answer, the reason /healthz gave)


def ask_healthz(layout: Layout) -> Health:
    """One ``GET /healthz`` on the device's admin page."""
    try:
        web = load_web_config(layout.host(layout.web_config))
    except WebConfigError as exc:
        return Health(False, str(exc))
    host = WILDCARDS.get(web.host, web.host)
    connection: http.client.HTTPConnection
    if web.tls:
        cert = layout.host(layout.web_dir / CERT_NAME)
        if not cert.is_file():
            return Health(False, f"no certificate at {cert} yet")
        context = _pinned(cert)
        connection = http.client.HTTPSConnection(
            host, web.port, timeout=ASK_TIMEOUT_S, context=context
        )
    else:
        connection = http.client.HTTPConnection(host, web.port, timeout=ASK_TIMEOUT_S)
    try:
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        body = response.read(MAX_BODY)
    except (OSError, http.client.HTTPException) as exc:  # ssl.SSLError is an OSError
        return Health(False, f"/healthz did not answer ({exc})")
    finally:
        connection.close()
    return _judge(response.status, body)


def _pinned(cert: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(cert))
    context.check_hostname = False  # the certificate itself is pinned (verify_mode stays)
    return context


def _judge(status: int, body: bytes) -> Health:
    try:
        data = json.loads(body)
    except ValueError:
        return Health(False, f"/healthz answered {status} without JSON")
    if not isinstance(data, dict):
        return Health(False, f"/healthz answered {status} without a status")
    if status == 200 and data.get("status") == "ok":
        return Health(True, "ok")
    reason = data.get("reason")
    said = f"/healthz says {data.get('status')!s}" + (f": {reason}" if reason else "")
    return Health(False, said)


def wait_healthy(
    service: ServiceControl,
    ask: Callable[[], Health],
    timeout_s: float,
    say: Say,
) -> Health:
    """Poll until the service is active and healthy, or ``timeout_s`` passed; a line for
    the installer every :data:`SAY_EVERY_S`. Returns the last answer."""
    start = time.monotonic()
    next_say = start + SAY_EVERY_S
    while True:
        health = ask() if service.is_active() else Health(False, f"{UNIT_NAME} is not active")
        if health.ok:
            return health
        now = time.monotonic()
        if now - start >= timeout_s:
            return health
        if now >= next_say:
            say(f"waiting for {UNIT_NAME} ({now - start:.0f} of {timeout_s:g} s): {health.said}")
            next_say += SAY_EVERY_S
        time.sleep(min(POLL_S, max(0.0, start + timeout_s - now)))
