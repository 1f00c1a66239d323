"""The build cache: Debian packages, apt's package lists and finished base roots.

``$MIRROR_IMAGE_CACHE`` or ``~/.cache/face-mirror/image``. A base root (the
Debian part of an image, before the mirror is installed) is kept as a tarball
named by a key of everything that goes into it, so a rebuild from the same
inputs takes it as is, with no network and no emulated package scripts. The
``.deb`` files and apt's lists are kept per release and architecture: a root
with a changed package list is built from them, and with the same lists the
same versions are chosen (``--refresh`` fetches new lists).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from provisioning.image.spec import ImageSpec

logger = logging.getLogger(__name__)

CACHE_ENV = "MIRROR_IMAGE_CACHE"
# Bump when the way a base root is made changes (the hooks in debian_root.py).
ROOT_LAYOUT = 2  # 2: dpkg leaves out manuals, docs and translations


def cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "face-mirror" / "image"


def root_key(spec: ImageSpec, hooks: list[str]) -> str:
    inputs = {
        "layout": ROOT_LAYOUT,
        "suite": spec.suite,
        "arch": spec.arch,
        "components": list(spec.components),
        "packages": sorted(spec.packages),
        "modules": list(spec.initramfs_modules),
        "hooks": hooks,
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]


def root_tarball(spec: ImageSpec, key: str) -> Path:
    return cache_dir() / "roots" / f"{spec.suite}-{spec.arch}-{key}.tar"


def apt_dirs(spec: ImageSpec) -> tuple[Path, Path]:
    """The kept ``.deb`` files and apt lists of the release and architecture."""
    base = cache_dir() / "apt" / f"{spec.suite}-{spec.arch}"
    return base / "archives", base / "lists"


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """One build of ``path`` at a time (another waits, then finds it built)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with (path.parent / f"{path.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
