"""What the Coral Edge TPU needs beyond this project, where each part comes from, and
whether a device has it, found without loading anything.

Two parts never come from a package index or from Debian:

- ``libedgetpu.so.1``, the Edge TPU runtime: the ``libedgetpu1-std`` package of Google's
  own Coral apt repository (Debian 12 and 13 have no such package);
- ``<model>_edgetpu.tflite``, a model compiled for the TPU: ``edgetpu_compiler`` (also
  Google's, x86-64 Debian/Ubuntu only) compiles only fully int8-quantised models, and the
  manifest's detectors are float32, so no compiled model exists until an installer makes
  one.

An installer brings both with ``mirror provision bundle --vendor DIR``. Without either
the Coral profiles run every model on the CPU (LiteRT), and ``mirror doctor`` says which
part is missing.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)

EDGETPU_LIBRARY = "libedgetpu.so.1"
EDGETPU_SUFFIX = "_edgetpu"
EDGETPU_PACKAGE = "libedgetpu1-std"
# Where Debian's dynamic loader looks (multiarch first), under the device's root.
LIBRARY_DIRS = (
    "usr/lib/aarch64-linux-gnu",
    "usr/lib/x86_64-linux-gnu",
    "usr/lib/arm-linux-gnueabihf",
    "lib/aarch64-linux-gnu",
    "lib/x86_64-linux-gnu",
    "usr/local/lib",
    "usr/lib",
    "lib",
)
CPU_INSTEAD = "the models run on the CPU (LiteRT) instead"


def edgetpu_variant(path: Path) -> Path:
    """``face_detector.tflite`` -> ``face_detector_edgetpu.tflite`` beside it."""
    return path.with_name(f"{path.stem}{EDGETPU_SUFFIX}{path.suffix}")


def library_path(library: str = EDGETPU_LIBRARY, root: Path = Path("/")) -> Path | None:
    """Where ``library`` is under ``root`` (a path is taken as it is); None when nowhere.

    Only looked for, never opened: loading libedgetpu into the mirror's own process is
    what may crash it (see ``edgetpu_probe``).
    """
    if "/" in library:
        found = Path(library)
        return found if found.is_file() else None
    dirs = [root / d for d in LIBRARY_DIRS]
    if root.resolve() == Path("/").resolve():
        extra = os.environ.get("LD_LIBRARY_PATH", "")
        dirs = [Path(d) for d in extra.split(":") if d] + dirs
    return next((d / library for d in dirs if (d / library).is_file()), None)


def library_missing(library: str = EDGETPU_LIBRARY) -> str:
    """Why the TPU cannot be used when its runtime library is not installed."""
    return (
        f"{library} (the Edge TPU runtime) is not installed: it is {EDGETPU_PACKAGE} from "
        "Google's Coral apt repository, not a Debian package (bring its .deb with "
        "`mirror provision bundle --vendor DIR`, see the README's Coral paragraph)"
    )


def variant_missing(variant: Path) -> str:
    """Why a model runs on the CPU when its compiled Edge TPU model is not there."""
    base = variant.name.replace(EDGETPU_SUFFIX, "", 1)
    return (
        f"no Edge TPU compiled variant {variant.name} in {variant.parent}: compile a full-int8 "
        f"{base} with edgetpu_compiler (Google's, x86-64 Debian/Ubuntu only) and bring it "
        "with `mirror provision bundle --vendor DIR`"
    )
