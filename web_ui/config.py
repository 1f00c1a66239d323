"""The admin UI's own settings: where it listens, from ``<data dir>/web/web.yaml``.

Provisioning writes the LAN interface's address here; without the file the
UI listens on 127.0.0.1 only (development). HTTPS unless ``tls: false``;
``allowed_hosts`` adds names the page may be reached by (``web_ui.hosts``). A bad file raises
``WebConfigError`` naming the key and value.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from appliance.config_yaml import load_config_yaml
from appliance.errors import ConfigError
from appliance.paths import web_dir
from web_ui.errors import WebConfigError

logger = logging.getLogger(__name__)

CONFIG_NAME = "web.yaml"
HOST_NAME = re.compile(r"[A-Za-z0-9.-]{1,253}|\[?[0-9A-Fa-f:.]{2,45}\]?")


class WebConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field(
        "127.0.0.1", description="Address to listen on: the LAN interface's, or 127.0.0.1."
    )
    port: int = Field(8000, ge=0, le=65535, description="TCP port (0 picks a free one).")
    threads: int = Field(
        8, ge=2, le=64, description="Request threads (each live preview uses one)."
    )
    max_preview_clients: int = Field(
        3, ge=1, le=16, description="Live previews open at once; more get a clear refusal."
    )
    preview_stall_s: float = Field(
        10.0,
        gt=0,
        le=300,
        description="A live preview whose client has read nothing for this long is closed.",
    )
    session_hours: float = Field(12.0, gt=0, le=720, description="A login lasts this long.")
    tls: bool = Field(
        True,
        description="HTTPS with the device's own certificate; plain HTTP on the same port only "
        "redirects. false: plain HTTP (only behind a venue's HTTPS proxy).",
    )
    allowed_hosts: tuple[str, ...] = Field(
        (),
        max_length=32,
        description="Names the page may be reached by besides the device's own (host name, "
        "<name>.local, its addresses, localhost): e.g. a name in the venue's DNS.",
    )

    @field_validator("host")
    @classmethod
    def _ip_address(cls, value: str) -> str:
        try:
            ipaddress.ip_address(value)
        except ValueError as exc:
            raise ValueError(f"must be an IP address such as 192.168.1.20, got {value!r}") from exc
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not HOST_NAME.fullmatch(name):
                raise ValueError(
                    f"must be host names or addresses such as mirror.example, got {name!r}"
                )
        return tuple(name.lower().rstrip(".") for name in value)


def load_web_config(path: Path | None = None) -> WebConfig:
    """Read ``web.yaml`` (default ``<data dir>/web/web.yaml``); a missing file gives defaults."""
    path = path or web_dir() / CONFIG_NAME
    if not path.exists():
        return WebConfig()
    try:  # the settings file's strict loader: no aliases, a size cap, ASCII numbers
        data = load_config_yaml(path) or {}
    except ConfigError as exc:
        raise WebConfigError(str(exc)) from exc
    if not isinstance(data, dict):
        raise WebConfigError(f"{path} must be a mapping, not {type(data).__name__}")
    try:
        return WebConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise WebConfigError(f"{path}: {key}={err.get('input')!r}: {err['msg']}") from exc
