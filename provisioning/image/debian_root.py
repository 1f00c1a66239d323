"""The Debian part of an image: ``mmdebstrap`` from Debian's own packages, cached.

The hooks write, before any package is installed, what the kernel's and the
firmware's package scripts read: the initramfs' short module list
(``MODULES=list``) and ``/etc/default/raspi-firmware`` (the root by label, so the
``cmdline.txt`` raspi-firmware writes finds it on any card). ``force-confold``
keeps those files when the packages bring their own. The result is a tarball in
the cache (see :mod:`provisioning.image.cache`).

Under emulation every file dpkg writes and every maintainer script costs: dpkg
leaves out the manuals, the documentation (not the copyright files) and the
translations (:data:`DPKG_EXCLUDES`; a kiosk has no reader for them), and does not
sync each file (``force-unsafe-io``: the root is a tarball at the end anyway).
The emulated programs run on a Cortex-A72 (``QEMU_CPU``, as for a mounted root in
:mod:`provisioning.in_root`), not qemu-user's default CPU.
"""

from __future__ import annotations

import logging
import os
import platform
import shlex
from pathlib import Path

from provisioning.errors import ImageError
from provisioning.image import cache
from provisioning.image.logged import run_logged
from provisioning.image.spec import SLOTS, ImageSpec, partuuid
from provisioning.in_root import EMULATED_CPU

logger = logging.getLogger(__name__)

SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BUILD_TIMEOUT_S = 3600
DPKG_EXCLUDES = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
    "path-include=/usr/share/locale/locale.alias",
    "path-exclude=/usr/share/lintian/*",
)


def _write(path: str, text: str) -> str:
    return f'printf %s {shlex.quote(text)} > "$1{path}"'


def content_hooks(spec: ImageSpec) -> list[str]:
    """Setup hooks that decide what the root holds (part of the cache key)."""
    modules = "".join(f"{name}\n" for name in spec.initramfs_modules)
    # the root of slot A; an update rewrites the root= and rauc.slot= of the slot it writes
    raspi = f'ROOTPART=PARTUUID={partuuid(SLOTS["A"][1])}\nCONSOLES="ttyS1,115200 tty0"\n'
    return [
        'mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/etc/default" "$1/boot/firmware"',
        _write("/etc/initramfs-tools/conf.d/mirror-image.conf", "MODULES=list\n"),
        _write("/etc/initramfs-tools/modules", modules),
        _write("/etc/default/raspi-firmware", raspi),
    ]


def mmdebstrap_command(spec: ImageSpec, out: Path, *, refresh: bool = False) -> list[str]:
    archives, lists = cache.apt_dirs(spec)
    cached_lists = lists.is_dir() and any(lists.glob("*_InRelease")) and not refresh
    cmd = [
        "mmdebstrap",
        "--mode=root",
        "--format=tar",
        f"--arch={spec.arch}",
        "--variant=apt",
        f"--components={','.join(spec.components)}",
        "--dpkgopt=force-confold",
        "--dpkgopt=force-unsafe-io",
        *(f"--dpkgopt={option}" for option in DPKG_EXCLUDES),
        f"--include={','.join(spec.packages)}",
        "--skip=essential/unlink",
    ]
    cmd += [f"--setup-hook={hook}" for hook in content_hooks(spec)]
    cmd += [
        '--setup-hook=mkdir -p "$1/var/cache/apt/archives" "$1/var/lib/apt/lists"',
        f"--setup-hook=sync-in {archives} /var/cache/apt/archives",
    ]
    if cached_lists:  # the same lists: the same versions, and no network
        cmd += [f"--setup-hook=sync-in {lists} /var/lib/apt/lists", "--skip=update"]
    cmd += [
        f"--customize-hook=sync-out /var/cache/apt/archives {archives}",
        f"--customize-hook=sync-out /var/lib/apt/lists {lists}",
        spec.suite,
        str(out),
    ]
    return cmd


def build_env(spec: ImageSpec) -> dict[str, str]:
    """mmdebstrap's environment: qemu-user (through binfmt_misc, which passes the environment
    on) emulates a Cortex-A72 for a foreign arm64 root unless ``QEMU_CPU`` says otherwise."""
    env = {**os.environ, "PATH": SEARCH_PATH}
    if spec.qemu_arch in EMULATED_CPU and spec.qemu_arch != platform.machine():
        env.setdefault("QEMU_CPU", EMULATED_CPU[spec.qemu_arch])
    return env


def base_root(spec: ImageSpec, log: Path, *, refresh: bool = False) -> tuple[Path, bool]:
    """The cached tarball of the spec's Debian root, built now when missing; and whether it
    was cached."""
    key = cache.root_key(spec, content_hooks(spec))
    tar = cache.root_tarball(spec, key)
    with cache.locked(tar):
        if tar.is_file() and not refresh:
            return tar, True
        for folder in cache.apt_dirs(spec):
            folder.mkdir(parents=True, exist_ok=True)
        partial = tar.with_name(tar.name + ".partial")
        partial.unlink(missing_ok=True)
        cmd = mmdebstrap_command(spec, partial, refresh=refresh)
        logger.info("mmdebstrap: %s", shlex.join(cmd))
        env = build_env(spec)
        try:
            run_logged("mmdebstrap", cmd, log, BUILD_TIMEOUT_S, env)
        except ImageError:
            partial.unlink(missing_ok=True)
            raise
        partial.rename(tar)
        return tar, False
