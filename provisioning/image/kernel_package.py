"""A Debian release's arm64 kernel package, unpacked for reading (not for booting).

``mmdebstrap --variant=extract`` downloads ``linux-image-arm64`` (and what it
depends on) and unpacks it without running any package script, so nothing runs
emulated; the host's ``depmod -b`` then writes ``modules.alias`` and
``modules.dep`` as the package's own script would on the device. The apt lists
and ``.deb`` files are the image cache's (:mod:`provisioning.image.cache`): with
lists already there, the same kernel version as the image's is read, and the
download is kept for the image build. The copy kept in the cache holds the
kernel image, its config, the device trees, the module index files and an index
of the modules' match tables (:func:`kernel_facts.match_tables`), not the modules.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
from pathlib import Path

from provisioning.errors import ImageError
from provisioning.image import cache
from provisioning.image.debian_root import SEARCH_PATH, build_env
from provisioning.image.kernel_facts import match_tables, modules_dir
from provisioning.image.logged import run_logged
from provisioning.image.spec import ImageSpec

logger = logging.getLogger(__name__)

KERNEL_PACKAGE = "linux-image-arm64"
EXTRACT_TIMEOUT_S = 1800
DEPMOD = "depmod"  # kmod


def lists_stamp(spec: ImageSpec) -> str | None:
    """A digest of the cached apt lists' Release files (None: no lists cached yet)."""
    _, lists = cache.apt_dirs(spec)
    releases = sorted(lists.glob("*Release")) if lists.is_dir() else []
    if not releases:
        return None
    digest = hashlib.sha256()
    for path in releases:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def kernel_dir(spec: ImageSpec) -> Path:
    return cache.cache_dir() / "kernels" / f"{spec.suite}-{spec.arch}"


def unpacked_kernel(spec: ImageSpec, log: Path) -> Path:
    """The kernel of ``spec``'s release, unpacked and indexed in the cache; built when its
    apt lists changed or it is missing."""
    out = kernel_dir(spec)
    with cache.locked(out):
        stamp = lists_stamp(spec)
        kept = out / "lists-stamp"
        if stamp and kept.is_file() and kept.read_text().strip() == stamp:
            return out
        partial = out.with_name(out.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        _extract(spec, partial, log, cached_lists=stamp is not None)
        _index(partial)
        (partial / "lists-stamp").write_text(f"{lists_stamp(spec)}\n")
        shutil.rmtree(out, ignore_errors=True)
        partial.rename(out)
        return out


def _extract(spec: ImageSpec, dest: Path, log: Path, *, cached_lists: bool) -> None:
    if shutil.which("mmdebstrap", path=SEARCH_PATH) is None:
        raise ImageError("reading the kernel package needs mmdebstrap: apt-get install mmdebstrap")
    archives, lists = cache.apt_dirs(spec)
    for folder in (archives, lists):
        folder.mkdir(parents=True, exist_ok=True)
    cmd = [
        "mmdebstrap",
        "--mode=root",
        "--format=directory",
        f"--arch={spec.arch}",
        "--variant=extract",
        f"--components={','.join(spec.components)}",
        f"--include={KERNEL_PACKAGE}",
        "--skip=essential/unlink",  # the .deb files stay, for the cache (and the image build)
        '--setup-hook=mkdir -p "$1/var/cache/apt/archives" "$1/var/lib/apt/lists"',
        f"--setup-hook=sync-in {archives} /var/cache/apt/archives",
    ]
    if cached_lists:
        cmd += [f"--setup-hook=sync-in {lists} /var/lib/apt/lists", "--skip=update"]
    cmd += [
        # the extract variant runs no customize hooks
        f"--extract-hook=sync-out /var/cache/apt/archives {archives}",
        f"--extract-hook=sync-out /var/lib/apt/lists {lists}",
        spec.suite,
        str(dest),
    ]
    logger.info("mmdebstrap: %s", " ".join(cmd))
    what = f"unpacking {KERNEL_PACKAGE} ({spec.suite})"
    run_logged(what, cmd, log, EXTRACT_TIMEOUT_S, build_env(spec))


def _index(root: Path) -> None:
    """``depmod``, the match-table index, then only what reading needs is kept."""
    mods = modules_dir(root)
    base = root
    if mods.parent == root / "usr/lib/modules" and not (root / "lib/modules").exists():
        (root / "lib").mkdir(exist_ok=True)  # depmod -b looks in BASE/lib/modules
        (root / "lib/modules").symlink_to("../usr/lib/modules")
    depmod = shutil.which(DEPMOD, path=SEARCH_PATH)
    if depmod is None:
        raise ImageError("reading the kernel package needs depmod: apt-get install kmod")
    done = subprocess.run(
        [depmod, "-b", str(base), mods.name], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise ImageError(f"depmod -b {base} {mods.name}: {done.stderr.strip()[-300:]}")
    match_tables(mods)
    for module in list(mods.rglob("*.ko*")):
        module.unlink()
    kept = root.with_name(root.name + ".kept")
    shutil.rmtree(kept, ignore_errors=True)
    for path in (root / "boot", mods.parent, *root.glob("usr/lib/linux-image-*")):
        dest = kept / path.relative_to(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        path.rename(dest)
    shutil.rmtree(root)
    kept.rename(root)


def device_tree_path(kernel_root: Path, dtb: str) -> Path:
    """The board's ``.dtb`` in the kernel package (``usr/lib/linux-image-VERSION/...``)."""
    version = modules_dir(kernel_root).name
    return kernel_root / "usr/lib" / f"linux-image-{version}" / dtb
