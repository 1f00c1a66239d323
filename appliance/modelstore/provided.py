"""Install the installer-provided models (``provided`` in the manifest) from a bundle.

These files are never downloaded: an installer copies them from an offline
bundle. Each one is hashed while it is copied and lands in the cache only
when its sha256 matches the manifest; a file whose hash the manifest does not
pin is refused (with its actual hash, so a person can check it and pin it).
A model the bundle does not carry is simply not installed: the appliance then
uses the geometric swapper and says why.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from appliance.errors import ModelHashError, OutputError
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
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        actual = _copy_hashing(source, fd)
        _check(actual, spec, key, source)
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, target)
    except OSError as exc:
        raise OutputError(f"cannot install {target}: {exc.strerror or exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)


def _copy_hashing(source: Path, fd: int) -> str:
    digest = hashlib.sha256()
    with open(source, "rb") as src, os.fdopen(fd, "wb") as dst:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
            dst.write(chunk)
        dst.flush()
        os.fsync(dst.fileno())
    return digest.hexdigest()


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
