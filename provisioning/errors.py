"""Errors of provisioning: each one a single line that names the file or step."""

from __future__ import annotations

from appliance.errors import MirrorError, ModelHashError


class ProvisionError(MirrorError):
    """Provisioning cannot go on; nothing more is written."""


class BundleError(ProvisionError, ValueError):
    """The offline bundle is missing, unreadable or incomplete."""


class BundleHashError(BundleError, ModelHashError):
    """A file in the bundle does not have the sha256 it must have."""


class ImageError(ProvisionError):
    """A device image cannot be built (tool missing, profile without an image, a step failed)."""


class VenueError(ProvisionError, ValueError):
    """The installer's venue file on the boot partition is unreadable or invalid."""


class UpdateError(ProvisionError):
    """An update bundle that cannot be installed (refused, unreadable, no A/B slots)."""
