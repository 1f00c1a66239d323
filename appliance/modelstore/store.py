"""The model cache: hands out only files whose sha256 matches the manifest."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from appliance.errors import ConfigError, ModelHashError, ModelMissingError
from appliance.modelstore.hashing import sha256_file
from appliance.modelstore.manifest import Entry, Manifest, ProvidedFile, load_manifest
from appliance.paths import model_cache_dir

logger = logging.getLogger(__name__)

FIX_HINT = "run `mirror models fetch` (or `mirror models fetch --from BUNDLE_DIR` offline)"


@dataclass(frozen=True)
class VerifyResult:
    name: str
    path: Path
    status: str  # "ok", "missing", "bad-hash" or (installer-provided) "unpinned"
    expected_sha256: str
    actual_sha256: str | None = None
    moved_to: Path | None = None


class ModelStore:
    """Verified access to the files listed in the manifest."""

    def __init__(self, cache_dir: Path | None = None, manifest: Manifest | None = None) -> None:
        self.cache_dir = cache_dir or model_cache_dir()
        self.manifest = manifest or load_manifest()
        self._verified: dict[str, tuple[int, int]] = {}

    def file_path(self, name: str) -> Path:
        return self.cache_dir / self.manifest.entry(name).file

    def quarantine_dir(self) -> Path:
        return self.cache_dir / "quarantine"

    def path(self, name: str) -> Path:
        """The path of a verified file; raises a clear error otherwise."""
        entry = self.manifest.entry(name)
        path = self.cache_dir / entry.file
        result = self.verify_one(name, entry)
        if result.status == "missing":
            raise ModelMissingError(f"{name}: model file {path} is missing; {FIX_HINT}")
        if result.status == "bad-hash":
            raise ModelHashError(
                f"{name}: model file {path} has sha256 {result.actual_sha256}, expected "
                f"{entry.sha256}; it was moved to {result.moved_to} and not loaded; {FIX_HINT}"
            )
        return path

    def verify_one(self, name: str, entry: Entry | None = None) -> VerifyResult:
        entry = entry or self.manifest.entry(name)
        return self._verify_file(name, self.cache_dir / entry.file, entry.sha256)

    def _verify_file(self, name: str, path: Path, expected: str) -> VerifyResult:
        try:
            stat = path.stat()
        except FileNotFoundError:
            return VerifyResult(name, path, "missing", expected)
        stamp = (stat.st_size, stat.st_mtime_ns)
        if self._verified.get(name) == stamp:
            return VerifyResult(name, path, "ok", expected, expected)
        actual = sha256_file(path)
        if actual == expected:
            self._verified[name] = stamp
            return VerifyResult(name, path, "ok", expected, actual)
        self._verified.pop(name, None)
        moved = self._move_aside(path)
        logger.error(
            "%s: sha256 %s does not match pinned %s; moved to %s", path, actual, expected, moved
        )
        return VerifyResult(name, path, "bad-hash", expected, actual, moved)

    def verify_provided(self, name: str, role: str = "model") -> VerifyResult:
        """Check an installer-provided file (``role``: model, fp32 or converter).

        Status ``unpinned`` when the manifest has no sha256 for it: never loaded.
        """
        spec = self._provided_file(name, role)
        path = self.cache_dir / spec.file
        if spec.sha256 is None:
            status = "unpinned" if path.exists() else "missing"
            return VerifyResult(f"{name}/{role}", path, status, "")
        return self._verify_file(f"{name}/{role}", path, spec.sha256)

    def provided_path(self, name: str, role: str = "model") -> Path:
        """The verified path of an installer-provided file; a clear error otherwise."""
        result = self.verify_provided(name, role)
        path = result.path
        if result.status == "missing":
            missing = ModelMissingError(
                f"{name}: {path.name} is not provisioned ({path} absent); run the installer bundle"
            )
            missing.filename = str(path)
            raise missing
        if result.status == "unpinned":
            raise ModelHashError(
                f"{name}: no sha256 is pinned for {path.name} in the manifest, so it is not "
                "loaded; pin the hash of the installer's file first"
            )
        if result.status == "bad-hash":
            raise ModelHashError(
                f"{name}: {path} has sha256 {result.actual_sha256}, expected "
                f"{result.expected_sha256}; it was moved to {result.moved_to} and not loaded; "
                "run the installer bundle again"
            )
        return path

    def has_provided(self, name: str, role: str) -> bool:
        """Whether ``name`` declares a ``role`` companion and its file is in the cache."""
        files = self.manifest.provided_entry(name).files()
        return role in files and (self.cache_dir / files[role].file).exists()

    def _provided_file(self, name: str, role: str) -> ProvidedFile:
        files = self.manifest.provided_entry(name).files()
        if role not in files:
            raise ConfigError(f"{name}: the manifest declares no {role} file")
        return files[role]

    def verify_all(self) -> list[VerifyResult]:
        return [self.verify_one(name, entry) for name, entry in self.manifest.entries().items()]

    def missing(self) -> list[str]:
        return [
            name
            for name, entry in self.manifest.entries().items()
            if not (self.cache_dir / entry.file).exists()
        ]

    def _move_aside(self, path: Path) -> Path:
        target_dir = self.quarantine_dir()
        target_dir.mkdir(parents=True, exist_ok=True)
        target = target_dir / f"{path.name}.{time.strftime('%Y%m%dT%H%M%S')}.{os.getpid()}.bad"
        os.replace(path, target)
        return target
