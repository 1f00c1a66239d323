"""Errors the admin web UI raises: leaves of the appliance's ``MirrorError`` tree."""

from __future__ import annotations

from appliance.errors import ConfigError, MirrorError


class PasswordError(MirrorError, ValueError):
    """A new password is not acceptable, or the current one is wrong."""


class WebConfigError(ConfigError):
    """The web UI's own configuration (web.yaml, auth.json, secret key) is unusable."""


class WrongPasswordError(PasswordError):
    """The current password given is wrong."""


class BundleUploadError(MirrorError, ValueError):
    """An update bundle's upload is refused (the message says why); ``status``: the HTTP one."""

    status = 400


class UploadConflictError(BundleUploadError):
    """Another upload or an update is under way, or a slice does not follow the last one."""

    status = 409


class BundleTooLargeError(BundleUploadError):
    """A bundle (or a slice of it) is bigger than allowed, or than announced."""

    status = 413


class NoRoomError(BundleUploadError):
    """The data partition has no room for the bundle."""

    status = 507
