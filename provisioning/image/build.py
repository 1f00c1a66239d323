"""``mirror image build``: a flashable image for a profile, from Debian's packages and a bundle.

Steps (each said on stderr as it starts, tool output in ``FILE.img.log``):
the host's tools, the bundle, the Debian root (mmdebstrap, cached), a fresh copy
of it, the mirror installed by ``mirror provision --secrets-at-first-start``
(the device venv made by the root's own python3 through chroot), the boot chain
of each board checked against the root's own kernel, device trees and
initramfs (:mod:`provisioning.image.boot_check`), the image's
first-boot files, a check that nothing secret or unique is inside, the image by
genimage, and the manifest. The old image is replaced only by a finished one.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provisioning.bundle import read_index
from provisioning.errors import ImageError
from provisioning.image.ab_layout import arrange
from provisioning.image.boot_check import check_image_root
from provisioning.image.debian_root import SEARCH_PATH, base_root
from provisioning.image.genimage_cfg import Signing
from provisioning.image.logged import run_logged
from provisioning.image.manifest import build_manifest, write_manifest
from provisioning.image.rauc_files import add_rauc_files
from provisioning.image.root_files import add_image_files, secrets_in
from provisioning.image.spec import ImageSpec, spec_for
from provisioning.image.steps import Say, Steps, say_stderr
from provisioning.image.update_units import add_update_units
from provisioning.layout import DEFAULT_VENV

logger = logging.getLogger(__name__)

# program -> the Debian package that brings it
TOOLS = {
    "mmdebstrap": "mmdebstrap",
    "genimage": "genimage",
    "mkdosfs": "dosfstools",
    "mcopy": "mtools",
    "mke2fs": "e2fsprogs",
    "unshare": "util-linux",
}
SIGNING_TOOLS = {"rauc": "rauc", "mksquashfs": "squashfs-tools"}  # the bundle
PROVISION_TIMEOUT_S = 3600
MOUNTED = """set -e
root=$1; shift
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
exec "$@"
"""


@dataclass(frozen=True)
class BuildRequest:
    profile: str
    bundle: Path
    out: Path
    root_bytes: int | None = None
    refresh: bool = False  # new Debian package lists (else the cached ones: same versions)
    keep_work: bool = False
    signing_key: Path | None = None  # the installer's: the bundle is signed with it
    signing_cert: Path | None = None  # its certificate: the image's keyring
    bundle_version: str | None = None  # else the mirror's version
    bundle_only: bool = False  # only the update bundle (``out`` is FILE.raucb), no card image


@dataclass(frozen=True)
class Built:
    image: Path
    manifest: Path
    root_cached: bool
    timings: dict[str, float]
    update_bundle: Path | None = None


def check_host(spec: ImageSpec, signing: bool = False) -> None:
    if os.geteuid() != 0:
        raise ImageError("building an image needs root (mmdebstrap, chroot, file owners)")
    tools = {**TOOLS, **(SIGNING_TOOLS if signing else {})}
    missing = sorted(
        {pkg for tool, pkg in tools.items() if not shutil.which(tool, path=SEARCH_PATH)}
    )
    if missing:
        raise ImageError(f"missing tools: apt-get install {' '.join(missing)}")
    if platform.machine() != spec.qemu_arch:
        handler = Path(f"/proc/sys/fs/binfmt_misc/qemu-{spec.qemu_arch}")
        if not handler.is_file():
            raise ImageError(
                f"an {spec.arch} root on this {platform.machine()} machine needs qemu-user-static "
                f"and binfmt ({handler} missing): apt-get install qemu-user-static binfmt-support"
            )


def check_bundle(spec: ImageSpec, bundle: Path) -> None:
    index = read_index(bundle)  # a missing or unreadable bundle.json: one BundleError line
    target = index.get("target") or {}
    name = target.get("name") if isinstance(target, dict) else target
    if name and name != spec.target:
        raise ImageError(
            f"bundle {bundle} is for {name}; the {spec.profile} image needs --target {spec.target}"
        )


def _mirror_command() -> list[str]:
    beside = Path(sys.executable).parent / "mirror"
    return [str(beside)] if beside.is_file() else [sys.executable, "-m", "appliance.cli.main"]


def _provision(request: BuildRequest, root: Path, log: Path) -> None:
    argv = [
        *_mirror_command(),
        "provision",
        "--root",
        str(root),
        "--bundle",
        str(request.bundle),
        "--profile",
        request.profile,
        "--secrets-at-first-start",
    ]
    namespace = ["unshare", "--mount", "--propagation", "private", "--"]
    cmd = [*namespace, "sh", "-c", MOUNTED, "sh", str(root), *argv]
    env = {**os.environ, "PATH": SEARCH_PATH + ":" + str(Path(sys.executable).parent)}
    run_logged("mirror provision into the image", cmd, log, PROVISION_TIMEOUT_S, env)


def _extract(tar: Path, dest: Path) -> None:
    dest.mkdir(parents=True)
    cmd = ["tar", "--extract", "--numeric-owner", "--same-permissions", "--xattrs", "-f"]
    done = subprocess.run(
        [*cmd, str(tar), "-C", str(dest)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise ImageError(f"cannot extract {tar}: {done.stderr.strip()[-300:]}")


def check_signing(request: BuildRequest) -> None:
    """Both the key and the certificate, or neither; readable files; the pair checked by
    ``rauc`` itself when the bundle is signed."""
    given = [p for p in (request.signing_key, request.signing_cert) if p is not None]
    if len(given) == 1:
        raise ImageError("--signing-key and --signing-cert go together (mirror image keygen)")
    for path in given:
        if not path.is_file():
            raise ImageError(f"{path}: no such file")


def _signing(request: BuildRequest, manifest: dict[str, Any]) -> Signing | None:
    if request.signing_key is None or request.signing_cert is None:
        return None
    version = request.bundle_version or str(manifest["python"].get("face-mirror", "0"))
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return Signing(request.signing_key.resolve(), request.signing_cert.resolve(), version, stamp)


def _checked(request: BuildRequest, say: Say) -> tuple[ImageSpec, Path]:
    """The spec and the image's path, once the request and this machine can make them."""
    spec = spec_for(request.profile, request.root_bytes)
    out = request.out.resolve()
    if request.bundle_only:
        if out.suffix != ".raucb":
            raise ImageError(f"{request.out}: the bundle's name must end in .raucb")
        if request.signing_key is None:
            raise ImageError("--bundle-only needs --signing-key and --signing-cert")
    elif out.suffix != ".img":
        raise ImageError(f"{request.out}: the image's name must end in .img")
    if not out.parent.is_dir():
        raise ImageError(f"{out.parent}: no such directory")
    check_signing(request)
    check_host(spec, signing=request.signing_key is not None)
    return spec, out


def build_image(request: BuildRequest, say: Say = say_stderr) -> Built:
    from provisioning.image.genimage_cfg import run_genimage

    spec, out = _checked(request, say)
    steps = Steps(10, say)
    log = out.with_name(out.name + ".log")
    log.write_text("")
    work = out.with_name(f".{out.name}.work")
    with steps.step(f"checking the bundle {request.bundle}"):
        check_bundle(spec, request.bundle)
    with steps.step(f"Debian {spec.suite} {spec.arch} root (mmdebstrap; log {log})"):
        tar, cached = base_root(spec, log, refresh=request.refresh)
        say(f"  {'cached' if cached else 'built'}: {tar}")
    shutil.rmtree(work, ignore_errors=True)
    root = work / "root"
    bundle_out: Path | None = None
    try:
        with steps.step("a fresh copy of the root"):
            _extract(tar, root)
        with steps.step(f"installing the mirror from the bundle ({request.profile})"):
            _provision(request, root, log)
        boards = ", ".join(board.name for board in spec.boards)
        with steps.step(f"the boot chain against the image's kernel and initramfs ({boards})"):
            findings = check_image_root(spec, root)
            if findings:
                raise ImageError("the image would not boot: " + "; ".join(str(f) for f in findings))
        with steps.step("first-boot and update files; removing what is unique to one machine"):
            add_image_files(root)
            add_rauc_files(root, request.signing_cert.resolve() if request.signing_cert else None)
            add_update_units(root)
        with steps.step("checking that nothing secret or per-device is inside"):
            found = secrets_in(root)
            if found:
                raise ImageError(f"the image would hold {', '.join(found)}")
            manifest = build_manifest(
                spec, root, root / str(DEFAULT_VENV).lstrip("/"), request.bundle
            )
        with steps.step("the A/B partitions: two slots, the shared boot files, the data"):
            arrange(root, work / "shared")
        signing = _signing(request, manifest)
        what = f"{out} and its signed update bundle" if signing else str(out)
        with steps.step(f"partitions and file systems (genimage) -> {what}"):
            bundle_out = run_genimage(
                spec, root, out, shared=work / "shared", work=work, log=log, signing=signing,
                card=not request.bundle_only,
            )  # fmt: skip
        manifest_path = out.with_name(out.name + ".manifest.json")
        with steps.step(f"manifest {manifest_path}"):
            if signing is not None:
                manifest["update"] = {"version": signing.version, "build": signing.build}
            write_manifest(manifest_path, manifest, out)
    finally:
        if not request.keep_work:
            shutil.rmtree(work, ignore_errors=True)
    return Built(out, manifest_path, cached, steps.timings, bundle_out)
