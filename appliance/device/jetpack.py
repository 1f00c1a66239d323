"""Which JetPack a Jetson runs, read from ``/etc/nv_tegra_release``, and what that implies.

The file's first line names the L4T release: ``# R36 (release), REVISION: 4.3, ...``.
L4T R36 is JetPack 6 (Ubuntu 22.04, Python 3.10): R36.2 the 6.0 developer preview,
R36.3 JetPack 6.0 (CUDA 12.2, TensorRT 8.6), R36.4 JetPack 6.1 and 6.2 (CUDA 12.6,
TensorRT 10.3). L4T R35 is JetPack 5 and R32 JetPack 4 (Ubuntu 20.04 / 18.04, Python
3.8 / 3.6), which this project's ``requires-python`` (3.10+) excludes; R38 is JetPack 7.

NVIDIA's onnxruntime-gpu for a Jetson is on no index pip reaches from here, and which
wheel fits depends on the CUDA of the JetPack: :func:`onnxruntime_source` names it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

logger = logging.getLogger(__name__)

_RELEASE = re.compile(r"\bR(\d+)\b.*?REVISION:\s*(\d+)(?:\.(\d+))?", re.IGNORECASE)
JETPACK6_MAJOR = 36
JETPACK6_FIRST_6_1 = 4  # R36.4.x is JetPack 6.1 (36.4.0) and 6.2 (36.4.3 and later)


@dataclass(frozen=True)
class L4tRelease:
    """``R36 REVISION 4.3`` -> major 36, revision 4, patch 3."""

    major: int
    revision: int
    patch: int

    @property
    def text(self) -> str:
        return f"L4T R{self.major}.{self.revision}.{self.patch}"

    @property
    def jetpack(self) -> str:
        """The JetPack release in words (``JetPack 6.1/6.2``)."""
        if self.major == JETPACK6_MAJOR:
            if self.revision >= JETPACK6_FIRST_6_1:
                return "JetPack 6.2" if self.patch >= 3 else "JetPack 6.1"
            return "JetPack 6.0" if self.revision == 3 else "JetPack 6.0 (developer preview)"
        names = {32: "JetPack 4", 35: "JetPack 5", 38: "JetPack 7"}
        return names.get(self.major, f"an unknown JetPack (L4T R{self.major})")

    def describe(self) -> str:
        return f"{self.jetpack} ({self.text})"


def parse_release(first_line: str | None) -> L4tRelease | None:
    """The release of ``/etc/nv_tegra_release``'s first line; None when it has none."""
    found = _RELEASE.search(first_line or "")
    if found is None:
        return None
    major, revision, patch = found.groups()
    return L4tRelease(int(major), int(revision), int(patch or 0))


def unsupported_reason(release: L4tRelease | None) -> str | None:
    """Why the mirror cannot run on this JetPack, or None when it can (or it is unknown)."""
    if release is None or release.major >= JETPACK6_MAJOR:
        return None
    python = {32: "3.6", 35: "3.8"}.get(release.major, "older than 3.10")
    return (
        f"{release.describe()} ships Python {python}, and the mirror needs Python 3.10 or "
        "newer: flash JetPack 6 (L4T R36), which runs on the Orin modules"
    )


def onnxruntime_source(release: L4tRelease | None) -> str:
    """Where NVIDIA's onnxruntime-gpu for this Jetson comes from, in words."""
    if release is not None and release.major == JETPACK6_MAJOR:
        if release.revision >= JETPACK6_FIRST_6_1:
            return (
                f"for {release.describe()}: NVIDIA's onnxruntime-gpu wheel for CUDA 12.6, "
                "cp310 linux_aarch64, from the Jetson AI Lab package index (jp6/cu126)"
            )
        return (
            f"for {release.describe()}: NVIDIA's onnxruntime-gpu wheel for JetPack 6.0 "
            "(CUDA 12.2), cp310 linux_aarch64, from the Jetson Zoo's ONNX Runtime table "
            "(the jp6/cu126 wheels need JetPack 6.1's CUDA 12.6)"
        )
    seen = release.describe() if release is not None else "an unknown JetPack"
    return (
        f"for {seen}: NVIDIA's onnxruntime-gpu wheel built for its CUDA and Python "
        "(JetPack 6.0: the Jetson Zoo; JetPack 6.1/6.2: the Jetson AI Lab index, jp6/cu126)"
    )
