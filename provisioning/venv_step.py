"""The device's venv, made offline from the bundle's wheels by the root's own Python.

The wheels are copied to ``/opt/mirror/wheels`` (sha256-checked like the
models), then::

    python3 -m venv --without-pip [--system-site-packages] /opt/mirror/venv
    /opt/mirror/venv/bin/python /opt/mirror/wheels/pip-X.whl/pip install --isolated \\
        --no-index --find-links /opt/mirror/wheels pip face-mirror[EXTRAS]==VERSION

pip runs from its own wheel (a supported way to run it), so the root needs
neither ensurepip (Debian's python3-venv) nor pip. ``--isolated`` keeps the
device's and this machine's pip configuration out. A stamp in the venv
records what was installed (version, extras, system site packages, every
wheel's sha256): the same bundle again changes nothing; anything else makes a
new venv from scratch beside the one in use, ``/opt/mirror/venvs/<version>-<hash>``
(no package of an old set is left behind, such as onnxruntime beside
onnxruntime-gpu), and :mod:`provisioning.switch_step` then points the
``/opt/mirror/venv`` link at it (see :mod:`provisioning.venvs`). The installer's vendor
wheels (``--vendor DIR``: NVIDIA's onnxruntime-gpu for a Jetson) are copied
beside the others and installed by name in the same pip run.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from appliance.device.profile import HardwareProfile
from appliance.modelstore.hashing import sha256_file
from provisioning.actions import Action, Status
from provisioning.bundle import Bundle, BundleFile, BundleWheels, VendorFile
from provisioning.errors import BundleError, ProvisionError
from provisioning.in_root import RootShell, chroot_blocker
from provisioning.layout import Layout
from provisioning.requirements import PROJECT
from provisioning.root_python import RootPython, check_bundle, probe_host, probe_root
from provisioning.vendor_files import wheel_requirement
from provisioning.venvs import STAMP, is_finished, venv_dir, venv_id

logger = logging.getLogger(__name__)

WHEEL_MODE = 0o644
_PIP_WHEEL = re.compile(r"^pip-[^-]+-py3-none-any\.whl$")


def wanted_stamp(
    wheels: BundleWheels, profile: HardwareProfile, vendor: Sequence[VendorFile] = ()
) -> dict[str, Any]:
    return {
        "project": PROJECT,
        "version": wheels.project_version,
        "extras": sorted(profile.install.extras),
        "system_site_packages": profile.install.system_site_packages,
        "python": wheels.target.python,
        "wheels": {name: f.sha256 for name, f in sorted(_all_wheels(wheels, vendor).items())},
    }


def _all_wheels(wheels: BundleWheels, vendor: Sequence[VendorFile]) -> dict[str, BundleFile]:
    """The bundle's wheels and the installer's vendor wheels (NVIDIA's onnxruntime-gpu)."""
    return {**wheels.files, **{v.name: v.file for v in vendor}}


def plan_venv(
    layout: Layout, profile: HardwareProfile, bundle: Bundle, shell: RootShell
) -> list[Action]:
    """The wheel copies and the venv step (deferred when the bundle has no wheels)."""
    wheels = bundle.wheels
    vendor = bundle.vendor_of("wheel")
    if wheels is None:
        note = "the bundle has no wheels (mirror provision bundle --with-wheels); left as it is"
        if vendor:
            note += f"; its vendor wheels ({', '.join(v.name for v in vendor)}) are not installed"
        return [Action("venv", layout.venv, "deferred", names=(PROJECT,), note=note)]
    _check_extras(wheels, profile)
    python = _root_python(layout, shell)
    check_bundle(wheels.target, python)
    actions = [_wheel_dir(layout), *_wheel_copies(layout, _all_wheels(wheels, vendor))]
    stamp = wanted_stamp(wheels, profile, vendor)
    status = _venv_status(layout, stamp)
    target = venv_dir(layout, venv_id(stamp))
    made = is_finished(layout.host(target))
    if status in ("create", "update") and not made and shell.mode == "chroot":
        blocker = chroot_blocker(layout.root, python.arch)
        if blocker is not None:
            raise ProvisionError(f"cannot make {target} in {layout.root}: {blocker}")
    data = (json.dumps(stamp, indent=2, sort_keys=True) + "\n").encode("utf-8")
    spec = _install_spec(wheels, profile)
    ssp = ", system site packages" if profile.install.system_site_packages else ""
    note = f"CPython {python.version}{ssp}, offline from {layout.wheels_dir} ({shell.mode})"
    if made and status != "unchanged":
        note = f"made by an earlier install, kept: no pip run ({note})"
    commands = _commands(layout, shell, wheels, profile, vendor, target=target)
    names = (spec, *(v.name for v in vendor))
    return [
        *actions,
        Action(
            "venv",
            layout.venv if status == "unchanged" else target,
            status,
            data=data,
            names=names,
            note=note,
            commands=commands,
        ),
    ]


def _check_extras(wheels: BundleWheels, profile: HardwareProfile) -> None:
    missing = sorted(set(profile.install.extras) - set(wheels.extras))
    if missing:
        raise BundleError(
            f"profile {profile.name} needs the extras {', '.join(missing)}, which the bundle's "
            f"wheels lack (made for [{', '.join(wheels.extras)}]): rebuild it with "
            f"mirror provision bundle --with-wheels --profile {profile.name}"
        )


def _root_python(layout: Layout, shell: RootShell) -> RootPython:
    if shell.mode == "host":
        assert layout.host_python is not None
        return probe_host(layout.host_python)
    return probe_root(layout.root)


def _wheel_dir(layout: Layout) -> Action:
    host = layout.host(layout.wheels_dir)
    status: Status = "unchanged" if host.is_dir() else "create"
    return Action("dir", layout.wheels_dir, status, mode=0o755)


def _wheel_copies(layout: Layout, files: dict[str, BundleFile]) -> list[Action]:
    actions = []
    for name, source in sorted(files.items()):
        target = layout.wheels_dir / name
        host = layout.host(target)
        status: Status = "create"
        if host.is_file():
            same = sha256_file(host) == source.sha256 and host.stat().st_mode & 0o777 == WHEEL_MODE
            status = "unchanged" if same else "update"
        actions.append(Action("wheel", target, status, mode=WHEEL_MODE, source=source))
    return actions


def _venv_status(layout: Layout, stamp: dict[str, Any]) -> Status:
    """The active venv's (through the link, or an older install's plain folder)."""
    venv = layout.host(layout.venv)
    if not (venv / "pyvenv.cfg").is_file():
        return "create"
    try:
        current = json.loads((venv / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "update"
    installed = (venv / "bin" / "mirror").is_file()
    return "unchanged" if current == stamp and installed else "update"


def _install_spec(wheels: BundleWheels, profile: HardwareProfile) -> str:
    extras = ",".join(profile.install.extras)
    return (
        f"{PROJECT}[{extras}]=={wheels.project_version}"
        if extras
        else (f"{PROJECT}=={wheels.project_version}")
    )


def _commands(
    layout: Layout,
    shell: RootShell,
    wheels: BundleWheels,
    profile: HardwareProfile,
    vendor: Sequence[VendorFile],
    *,
    target: PurePosixPath,
) -> tuple[tuple[str, ...], ...]:
    pips = sorted(name for name in wheels.files if _PIP_WHEEL.match(name))
    if not pips:
        raise BundleError(f"{wheels.project_wheel}: the bundle has no pip wheel: rebuild it")
    venv = shell.path(target)  # a new folder: apply removes an unfinished one first
    found = shell.path(layout.wheels_dir)
    make = [shell.python, "-m", "venv", "--without-pip"]
    make += ["--system-site-packages"] if profile.install.system_site_packages else []
    install = [f"{venv}/bin/python", f"{found}/{pips[-1]}/pip", "install", "--isolated"]
    install += ["--no-index", "--find-links", found, "--disable-pip-version-check", "--no-input"]
    # the vendor wheels by name and version (pip finds them in the same folder)
    install += ["pip", _install_spec(wheels, profile), *(wheel_requirement(v.name) for v in vendor)]
    return (shell.argv(*make, venv), shell.argv(*install))
