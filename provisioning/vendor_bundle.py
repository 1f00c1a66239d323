"""``mirror provision bundle OUT --vendor DIR``: the installer's vendor files into ``OUT/vendor``.

Every file of DIR (its top level) must be one of the kinds of
:mod:`provisioning.vendor_files`, made for the bundle's target: a wheel whose tags the
target's Python and platform accept, a Debian package of the target's architecture (or
``all``). Anything else stops the build with one line naming the file, before the wheels
are fetched. ``OUT/vendor`` is made anew at each build, so a bundle never carries vendor
files of an earlier one; ``bundle.json`` then records each file's sha256.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path

from packaging.utils import parse_wheel_filename

from appliance.errors import OutputError
from appliance.modelstore.manifest import Manifest
from provisioning.errors import BundleError, ProvisionError
from provisioning.targets import Target, platform_tags
from provisioning.vendor_files import DEB_ARCH, VENDOR, deb_name, kind_of

logger = logging.getLogger(__name__)

Say = Callable[[str], None]


def wheel_fits(name: str, target: Target) -> bool:
    """Whether the wheel ``name`` installs on ``target`` (its Python and platform tags)."""
    major, minor = target.python_tuple
    pythons = {f"cp{major}{minor}", f"py{major}{minor}", f"py{major}", "py2.py3"}
    platforms = {*platform_tags(target), "any"}
    tags = parse_wheel_filename(name)[3]
    return any(t.interpreter in pythons and t.platform in platforms for t in tags)


def _check_for_target(path: Path, kind: str, target: Target) -> None:
    if kind == "wheel" and not wheel_fits(path.name, target):
        raise BundleError(
            f"vendor wheel {path.name} does not install on {target.describe()}: bring the "
            "one built for the device's JetPack and Python"
        )
    if kind == "deb":
        arch = deb_name(path.name).arch
        wanted = DEB_ARCH.get(target.arch, target.arch)
        if arch not in (wanted, "all"):
            raise BundleError(
                f"vendor package {path.name} is for {arch}, the target "
                f"{target.describe()} is {wanted}"
            )


def collect_vendor(
    source: Path | None, out: Path, manifest: Manifest, target: Target, say: Say
) -> list[Path]:
    """Copy the vendor files of ``source`` into ``out/vendor``; returns the vendor wheels."""
    folder = out / VENDOR
    shutil.rmtree(folder, ignore_errors=True)
    if source is None:
        return []
    if not source.is_dir():
        raise ProvisionError(f"--vendor {source}: not a folder")
    files = sorted(p for p in source.iterdir() if p.is_file() and not p.name.startswith("."))
    if not files:
        raise ProvisionError(f"--vendor {source}: no files in it")
    model_files = {e.file for e in manifest.entries().values()}
    kinds = {path: kind_of(path.name, model_files) for path in files}
    for path, kind in kinds.items():
        _check_for_target(path, kind, target)
    try:
        folder.mkdir(parents=True)
        for path, kind in kinds.items():
            shutil.copyfile(path, folder / path.name)
            say(f"vendor {kind} {path.name} added")
    except OSError as exc:
        raise OutputError(f"cannot copy the vendor files into {folder}: {exc}") from exc
    return [folder / p.name for p, kind in kinds.items() if kind == "wheel"]
