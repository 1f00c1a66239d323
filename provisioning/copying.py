"""Copy a file atomically while hashing it: it lands only when its sha256 is the expected one."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from appliance.errors import OutputError
from provisioning.errors import BundleHashError

logger = logging.getLogger(__name__)

_CHUNK = 1 << 20


def copy_verified(
    source: Path,
    target: Path,
    sha256: str,
    mode: int,
    on_bytes: Callable[[int], None] | None = None,
) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
            while chunk := src.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
                if on_bytes is not None:
                    on_bytes(len(chunk))
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != sha256:
            raise BundleHashError(
                f"bundle file {source} changed while it was copied (sha256 {digest.hexdigest()}, "
                f"expected {sha256}); {target} not written"
            )
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
