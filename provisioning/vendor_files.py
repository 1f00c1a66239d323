"""Vendor files an installer brings (``mirror provision bundle --vendor DIR``): what each is.

Parts that no index or archive reachable offline carries, told apart by their names:

- ``*.whl``: a wheel from a hardware vendor (NVIDIA's onnxruntime-gpu for a Jetson's
  JetPack), installed into the device's venv with the bundle's other wheels;
- ``PACKAGE_VERSION_ARCH.deb``: a Debian package (Google's ``libedgetpu1-std``, the Coral
  runtime), installed with ``dpkg -i`` on the device;
- ``<manifest model>_edgetpu.tflite``: a model compiled for the Coral Edge TPU by
  ``edgetpu_compiler``, copied beside its CPU model in the model cache.

Unlike the installer-provided models of ``--from DIR``, which the model manifest pins,
these differ per JetPack or per compiler run, so the project cannot pin them: the bundle
records each file's sha256 when it is made, and provisioning checks the file against it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from appliance.inference.edgetpu_parts import EDGETPU_SUFFIX
from provisioning.errors import BundleError

logger = logging.getLogger(__name__)

VENDOR = "vendor"
Kind = Literal["wheel", "deb", "edgetpu-model"]
# dpkg-name's form; the version may hold an epoch as %3a
_DEB = re.compile(r"^([a-z0-9][a-z0-9+.-]+)_([0-9A-Za-z.+~%:-]+)_([a-z0-9-]+)\.deb$")
DEB_ARCH = {"aarch64": "arm64", "x86_64": "amd64", "armv7l": "armhf"}


@dataclass(frozen=True)
class DebName:
    package: str
    version: str
    arch: str


def deb_name(name: str) -> DebName:
    found = _DEB.match(name)
    if found is None:
        raise BundleError(
            f"vendor file {name}: a Debian package must be named PACKAGE_VERSION_ARCH.deb "
            "(as dpkg-name names it)"
        )
    package, version, arch = found.groups()
    return DebName(package, version.replace("%3a", ":"), arch)


def wheel_requirement(name: str) -> str:
    """``onnxruntime_gpu-1.20.0-cp310-cp310-linux_aarch64.whl`` -> ``onnxruntime-gpu==1.20.0``
    (pinned: an older wheel of the project may still lie in the device's wheel folder)."""
    project, version, _build, _tags = parse_wheel_filename(name)
    return f"{project}=={version}"


def kind_of(name: str, model_files: Collection[str]) -> Kind:
    """What the vendor file ``name`` is; raises naming what it may be."""
    if name.endswith(".whl"):
        try:
            parse_wheel_filename(name)
        except InvalidWheelFilename as exc:
            raise BundleError(f"vendor file {name}: not a wheel's name ({exc})") from exc
        return "wheel"
    if name.endswith(".deb"):
        deb_name(name)
        return "deb"
    stem, dot, suffix = name.rpartition(".")
    if dot and stem.endswith(EDGETPU_SUFFIX):
        base = f"{stem.removesuffix(EDGETPU_SUFFIX)}.{suffix}"
        if base in model_files:
            return "edgetpu-model"
        known = ", ".join(sorted(m for m in model_files if m.endswith(".tflite")))
        raise BundleError(
            f"vendor file {name}: compiled from {base}, which is no model of the manifest "
            f"(known: {known})"
        )
    raise BundleError(
        f"vendor file {name}: not a wheel (.whl), a Debian package (PACKAGE_VERSION_ARCH.deb) "
        "or an Edge TPU model (<manifest model>_edgetpu.tflite)"
    )
