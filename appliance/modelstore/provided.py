"""Install the installer-provided models (``provided`` in the manifest) from a bundle.

These files are never downloaded: an installer copies them from an offline
bundle. Each one is hashed while it is copied and lands in the cache only
when its sha256 matches the manifest; a file whose hash the manifest does not
pin is refused (with its actual hash, so a person can check it and pin it).
A model the bundle does not carry is simply not installed: the appliance then
uses the geometric swapper and says why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from appliance.errors import ModelHashError
from appliance.fileio import copy_verified
from appliance.modelstore.manifest import ProvidedFile
from appliance.modelstore.store import ModelStore

logger = logging.getLogger(__name__)

Progress = Callable[[str], None]

_CHUNK = 1 << 20


@dataclass
class ProvidedReport:
    installed: list[str] = field(default_factory=list)  # "name/role"
    already_present: list[str] = field(default_factory=list)
    not_in_bundle: list[str] = field(default_factory=list)


def install_provided(
    store: ModelStore,
    bundle_dir: Path,
    progress: Progress | None = None,
    names: list[str] | None = None,
) -> ProvidedReport:
    """Copy every (or each named) provided file found in ``bundle_dir`` into the cache."""
    say = progress or (lambda _msg: None)
    report = ProvidedReport()
    for name, entry in store.manifest.provided.items():
        if names is not None and name not in names:
            continue
        for role, spec in entry.files().items():
            key = f"{name}/{role}"
            if store.verify_provided(name, role).status == "ok":
                report.already_present.append(key)
                continue
            source = Path(bundle_dir) / spec.file
            if not source.is_file():
                report.not_in_bundle.append(key)
                continue
            _install(store.cache_dir / spec.file, source, spec, key)
            size_mb = source.stat().st_size / 1e6
            say(f"{key}: {spec.file} verified ({size_mb:.1f} MB)")
            report.installed.append(key)
    if report.not_in_bundle:
        say(f"not in the bundle (not installed): {', '.join(report.not_in_bundle)}")
    return report


def _install(target: Path, source: Path, spec: ProvidedFile, key: str) -> None:
    """Stream ``source`` into ``target`` (atomically), hashing it on the way."""
    copy_verified(source, target, lambda actual: _check(actual, spec, key, source), 0o644)


def _check(actual: str, spec: ProvidedFile, key: str, source: Path) -> None:
    if spec.sha256 is None:
        raise ModelHashError(
            f"{key}: the manifest pins no sha256 for {spec.file}, so it is not installed; "
            f"{source} has sha256 {actual}: check it against the vendor's and pin it"
        )
    if actual != spec.sha256:
        raise ModelHashError(
            f"{key}: {source} has sha256 {actual}, expected {spec.sha256}; not installed"
        )
