"""One exception root for the appliance, with a leaf per kind of failure.

Leaves also inherit the matching builtin so callers that only know the
builtin still catch them. Every message says what went wrong and, where
there is one, what to do about it: the CLI prints it as a single line.
"""

from __future__ import annotations

from typing import Final

# The exit status of a NotRunnableError (sysexits' EX_CONFIG): the unit does not restart on it.
EXIT_NOT_RUNNABLE: Final = 78


class MirrorError(Exception):
    """Root of every error the appliance raises on purpose."""


class MirrorWarning(UserWarning):
    """Root of warnings for degraded-but-working fallbacks."""


class ConfigError(MirrorError, ValueError):
    """A setting is missing, of the wrong type or out of range."""


class SettingsConflictError(ConfigError):
    """A settings change made on a page that is out of date collides with a change saved
    since; ``conflicts``: one line per setting both changed (empty: the page is too old to
    compare)."""

    def __init__(self, message: str, conflicts: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.conflicts = conflicts


class ModelError(MirrorError):
    """A model file cannot be used."""


class ModelMissingError(ModelError, FileNotFoundError):
    """A model file is not in the model cache."""


class ModelHashError(ModelError, ValueError):
    """A model file's sha256 does not match the pinned one."""


class ModelFetchError(ModelError):
    """A model package could not be downloaded or unpacked."""


class BackendError(MirrorError, RuntimeError):
    """An inference backend cannot load or run a model."""


class BackendFallbackWarning(MirrorWarning):
    """A faster backend was asked for and a slower one is used instead."""


class InputError(MirrorError, ValueError):
    """An input image or video cannot be read."""


class ImageTooLargeError(InputError):
    """An image has more pixels than the appliance decodes (checked from its header)."""


class NoFaceError(InputError):
    """An image that must show a face shows none (or none usable)."""


class SourceError(MirrorError, OSError):
    """A frame source (camera, video, demo) cannot deliver frames."""


class OutputError(MirrorError, OSError):
    """An output file or sink cannot be written."""


class NotRunnableError(MirrorError):
    """The mirror cannot run on this device or install as it stands, and no restart helps
    (an unsupported board, a venv whose numpy the OS's cv2 cannot import): the CLI exits
    with ``EXIT_NOT_RUNNABLE``, which the systemd unit does not restart on."""


class MissingExtraError(MirrorError, ImportError):
    """An optional install extra (such as ``.[eval]``) is needed and not installed."""


class UploadError(InputError):
    """An uploaded photo cannot be used: too big, not an image, no face or several."""


class IdentityError(MirrorError, ValueError):
    """An identity operation cannot be done (the message says why)."""


class IdentityNameError(IdentityError):
    """An identity name is not allowed, or already taken."""


class IdentityNotFoundError(IdentityError, LookupError):
    """No identity of that name."""
