"""Errors of provisioning: each one a single line that names the file or step."""

from __future__ import annotations

from appliance.errors import MirrorError, ModelHashError


class ProvisionError(MirrorError):
    """Provisioning cannot go on; nothing more is written."""


class BundleError(ProvisionError, ValueError):
    """The offline bundle is missing, unreadable or incomplete."""


class BundleHashError(BundleError, ModelHashError):
    """A file in the bundle does not have the sha256 it must have."""
