"""numpy 2 in the venv against the OS's cv2 built for numpy 1, told before ``import cv2``.

JetPack 6's OpenCV (with GStreamer) comes from the OS, built against Ubuntu 22.04's numpy
1.21; a venv with numpy 2 shadows that numpy and ``import cv2`` fails ("numpy.core.
multiarray failed to import", after a long message numpy prints itself). Every ``mirror``
command imports cv2, so this is checked first, without importing either package: where
the numpy this Python imports is 2.x, the cv2 it finds is not a pip distribution (the OS's)
and the OS's own numpy beside it is 1.x, the one line says so and how to fix it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

logger = logging.getLogger(__name__)

PIP_OPENCV = ("opencv-python", "opencv-python-headless", "opencv-contrib-python")


@dataclass(frozen=True)
class Found:
    """A top-level package: the folder of ``sys.path`` it is in, and its version there."""

    site: Path
    version: str | None


def _site_of(name: str, paths: Sequence[str]) -> Path | None:
    """The ``paths`` entry that holds module ``name`` first (not importing it)."""
    for entry in paths:
        if not entry:
            continue
        base = Path(entry)
        if (base / name / "__init__.py").is_file() or any(base.glob(f"{name}.*.so")):
            return base
    return None


def _version_in(site: Path, name: str) -> str | None:
    """The version of distribution ``name`` installed in ``site``, from its metadata folder's
    name (``numpy-1.21.5.egg-info``, ``numpy-2.2.6.dist-info``): no file is read."""
    for suffix in (".dist-info", ".egg-info"):
        for folder in sorted(site.glob(f"{name}-*{suffix}")):
            version = folder.name[len(name) + 1 :].removesuffix(suffix).split("-py")[0]
            if version:
                return version
    return None


def _major(version: str | None) -> int | None:
    try:
        return Version(version).major if version else None
    except InvalidVersion:
        return None


def find(name: str, paths: Sequence[str]) -> Found | None:
    site = _site_of(name, paths)
    return None if site is None else Found(site, _version_in(site, name))


def mismatch(paths: Sequence[str] | None = None, python: str | None = None) -> str | None:
    """The one line that says numpy 2 here breaks the OS's cv2; None when it does not."""
    paths = list(sys.path if paths is None else paths)
    numpy = find("numpy", paths)
    if numpy is None or (_major(numpy.version) or 0) < 2:
        return None
    cv2 = find("cv2", paths)
    if cv2 is None:
        return None
    if any(_version_in(cv2.site, name.replace("-", "_")) for name in PIP_OPENCV):
        return None  # pip's opencv: built for the numpy pip resolved with it
    others = [Path(p) for p in paths if p and Path(p) != numpy.site and Path(p).is_dir()]
    system = next((v for v in (_version_in(p, "numpy") for p in others) if v), None)
    if (_major(system) or 2) >= 2:
        return None
    pip = f"{python or sys.executable} -m pip install 'numpy>=1.24,<2'"
    return (
        f"numpy {numpy.version} (in {numpy.site}) cannot run the OS's cv2 ({cv2.site}/cv2), "
        f"which is built for the OS's numpy {system}: `import cv2` would fail. Install numpy "
        f"below 2 in this venv: {pip} (the `jetson` extra pins it; a bundle of this "
        "version provisions it)"
    )
