"""Copy a bundle file atomically while hashing it: it lands only with the expected sha256."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from appliance.fileio import copy_verified as copy_checked
from provisioning.errors import BundleHashError

logger = logging.getLogger(__name__)


def copy_verified(
    source: Path,
    target: Path,
    sha256: str,
    mode: int,
    on_bytes: Callable[[int], None] | None = None,
) -> None:
    def check(actual: str) -> None:
        if actual != sha256:
            raise BundleHashError(
                f"bundle file {source} changed while it was copied (sha256 {actual}, "
                f"expected {sha256}); {target} not written"
            )

    copy_checked(source, target, check, mode, on_bytes)
