"""Errors the admin web UI raises: leaves of the appliance's ``MirrorError`` tree."""

from __future__ import annotations

from appliance.errors import ConfigError, InputError, MirrorError


class UploadError(InputError):
    """An uploaded photo cannot be used: too big, not an image, no face or several."""


class IdentityError(MirrorError, ValueError):
    """An identity operation cannot be done (the message says why)."""


class IdentityNameError(IdentityError):
    """An identity name is not allowed, or already taken."""


class IdentityNotFoundError(IdentityError, LookupError):
    """No identity of that name."""


class PasswordError(MirrorError, ValueError):
    """A new password is not acceptable, or the current one is wrong."""


class WebConfigError(ConfigError):
    """The web UI's own configuration (web.yaml, auth.json, secret key) is unusable."""


class WrongPasswordError(PasswordError):
    """The current password given is wrong."""
