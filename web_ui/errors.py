"""Errors the admin web UI raises: leaves of the appliance's ``MirrorError`` tree."""

from __future__ import annotations

from appliance.errors import ConfigError, MirrorError


class PasswordError(MirrorError, ValueError):
    """A new password is not acceptable, or the current one is wrong."""


class WebConfigError(ConfigError):
    """The web UI's own configuration (web.yaml, auth.json, secret key) is unusable."""


class WrongPasswordError(PasswordError):
    """The current password given is wrong."""
