"""The offline bundle: its layout, its ``bundle.json``, and checking it before any write.

Layout::

    BUNDLE/bundle.json        {"format": 1, "profile": ..., "files": {REL: {sha256, size}}, ...}
    BUNDLE/models/FILE        every manifest model and asset, and installer-provided models
    BUNDLE/onnx/FILE          (a profile with ``.onnx`` roles) the ONNX variants made where
                          the bundle was built, and their ``variants.json``
    BUNDLE/wheels/*.whl       (``--with-wheels``) the project and its dependencies, for the
                          target (platform, Python) and extras ``bundle.json`` records
    BUNDLE/vendor/FILE        (``--vendor DIR``) the installer's vendor files: NVIDIA's
                          wheels, Google's .deb, compiled Edge TPU models (see
                          :mod:`provisioning.vendor_files`); checked against the sha256
                          ``bundle.json`` recorded when the bundle was made

:func:`verify_bundle` hashes every listed file and checks it against
``bundle.json`` *and* the model manifest; provisioning calls it before it
writes anything, so a corrupted bundle leaves the target root untouched.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from appliance.modelstore.hashing import sha256_file
from appliance.modelstore.manifest import Manifest
from provisioning import targets, vendor_files
from provisioning.errors import BundleError, BundleHashError, ProvisionError
from provisioning.targets import Target

logger = logging.getLogger(__name__)

INDEX = "bundle.json"
FORMAT = 1
MODELS = "models"
WHEELS = "wheels"
ONNX_DIR = "onnx"  # the profile's ONNX variants and their variants.json (onnx_steps)

Progress = Callable[[str, int], None]  # (file, bytes) after each file


@dataclass(frozen=True)
class BundleFile:
    path: Path  # on this machine
    sha256: str
    size: int


@dataclass(frozen=True)
class BundleWheels:
    """The bundle's wheels (file name -> file) and what they were made for."""

    files: dict[str, BundleFile]
    target: Target
    extras: tuple[str, ...]
    project_version: str
    project_wheel: str


@dataclass(frozen=True)
class VendorFile:
    """One vendor file of a checked bundle: a wheel, a Debian package or an Edge TPU model."""

    kind: vendor_files.Kind
    name: str
    file: BundleFile


@dataclass(frozen=True)
class Bundle:
    """A checked bundle: every model file by its cache file name, its wheels if any, and
    the installer's vendor files."""

    directory: Path
    profile: str | None
    models: dict[str, BundleFile]
    wheels: BundleWheels | None = None
    vendor: tuple[VendorFile, ...] = ()
    onnx: dict[str, BundleFile] = field(default_factory=dict)  # ONNX_DIR's files by name

    def vendor_of(self, kind: vendor_files.Kind) -> list[VendorFile]:
        return [v for v in self.vendor if v.kind == kind]


def pinned_hashes(manifest: Manifest) -> dict[str, str | None]:
    """file name -> the manifest's sha256 (None: an installer-provided file left unpinned)."""
    pins: dict[str, str | None] = {e.file: e.sha256 for e in manifest.entries().values()}
    for entry in manifest.provided.values():
        for spec in entry.files().values():
            pins[spec.file] = spec.sha256
    return pins


def read_index(directory: Path) -> dict[str, Any]:
    path = directory / INDEX
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(f"{path} is missing: build it with `mirror provision bundle`") from None
    except (OSError, ValueError) as exc:
        raise BundleError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BundleError(f"{path}: not a format {FORMAT} bundle index")
    if not isinstance(data.get("files"), dict):
        raise BundleError(f"{path}: no 'files' mapping")
    return data


def verify_bundle(directory: Path, manifest: Manifest, progress: Progress | None = None) -> Bundle:
    """Check every file of the bundle; raises naming the first bad or missing file."""
    directory = Path(directory)
    index = read_index(directory)
    pins = pinned_hashes(manifest)
    models: dict[str, BundleFile] = {}
    wheel_files: dict[str, BundleFile] = {}
    vendor: list[VendorFile] = []
    onnx: dict[str, BundleFile] = {}
    model_files = {e.file for e in manifest.entries().values()}
    for rel, meta in sorted(index["files"].items()):
        checked = _check_file(directory, rel, meta)
        if progress is not None:
            progress(rel, checked.size)
        if rel.startswith(f"{MODELS}/"):
            name = rel.removeprefix(f"{MODELS}/")
            _check_pinned(checked, name, pins)
            models[name] = checked
        elif rel.startswith(f"{WHEELS}/") and rel.endswith(".whl"):
            wheel_files[rel.removeprefix(f"{WHEELS}/")] = checked
        elif rel.startswith(f"{vendor_files.VENDOR}/"):
            name = rel.removeprefix(f"{vendor_files.VENDOR}/")
            vendor.append(VendorFile(vendor_files.kind_of(name, model_files), name, checked))
        elif rel.startswith(f"{ONNX_DIR}/"):
            onnx[rel.removeprefix(f"{ONNX_DIR}/")] = checked
    missing = sorted(e.file for e in manifest.entries().values() if e.file not in models)
    if missing:
        raise BundleError(f"bundle {directory} lacks {', '.join(missing)} (in the model manifest)")
    profile = index.get("profile")
    wheels = _wheels(directory, index, wheel_files)
    return Bundle(directory, str(profile) if profile else None, models, wheels, tuple(vendor), onnx)


def _wheels(
    directory: Path, index: dict[str, Any], files: dict[str, BundleFile]
) -> BundleWheels | None:
    if not (index.get("wheels") or {}).get("included"):
        return None
    where = directory / INDEX
    try:
        record, project = index["target"], index["project"]
        extras = tuple(str(e) for e in record.get("extras", []))
        version, wheel = str(project["version"]), str(project["wheel"])
    except (KeyError, TypeError, AttributeError):
        raise BundleError(
            f"{where}: wheels without a target and project record: rebuild it"
        ) from None
    try:
        target = targets.from_json(record)
    except ProvisionError as exc:
        raise BundleError(f"{where}: {exc}") from exc
    if wheel not in files:
        raise BundleError(f"{where}: the project wheel {wheel} is not in the bundle")
    return BundleWheels(files, target, extras, version, wheel)


def _check_file(directory: Path, rel: str, meta: Any) -> BundleFile:
    path = directory / rel
    if not isinstance(meta, dict) or not isinstance(meta.get("sha256"), str):
        raise BundleError(f"{directory / INDEX}: entry {rel} has no sha256")
    if ".." in Path(rel).parts or Path(rel).is_absolute():
        raise BundleError(f"{directory / INDEX}: entry {rel} points outside the bundle")
    if not path.is_file():
        raise BundleError(f"bundle file {path} is missing")
    actual = sha256_file(path)
    if actual != meta["sha256"]:
        raise BundleHashError(
            f"bundle file {path} has sha256 {actual}, expected {meta['sha256']} (bundle.json); "
            "nothing was written"
        )
    return BundleFile(path, actual, path.stat().st_size)


def _check_pinned(checked: BundleFile, name: str, pins: dict[str, str | None]) -> None:
    if name not in pins:
        raise BundleError(f"bundle file {checked.path} is not in the model manifest")
    pinned = pins[name]
    if pinned is None:
        raise BundleHashError(
            f"bundle file {checked.path}: the manifest pins no sha256 for {name}; refused "
            f"(its sha256 is {checked.sha256})"
        )
    if checked.sha256 != pinned:
        raise BundleHashError(
            f"bundle file {checked.path} has sha256 {checked.sha256}, the model manifest pins "
            f"{pinned}; nothing was written"
        )
