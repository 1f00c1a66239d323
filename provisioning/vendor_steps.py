"""The bundle's vendor files on the device: Edge TPU models and Debian packages.

(Vendor wheels go into the venv with the other wheels: :mod:`provisioning.venv_step`.)

- a compiled Edge TPU model is copied into the model cache beside its CPU model
  (``/var/lib/mirror/models/face_detector_edgetpu.tflite``), sha256-checked;
- a Debian package (Google's ``libedgetpu1-std``) is copied to ``/opt/mirror/vendor``,
  then on the live device installed with ``dpkg -i`` unless ``/var/lib/dpkg/status``
  already has that version. In a mounted root (``--root``) dpkg is not run: a package's
  maintainer scripts are the device's to run, so the step is deferred and says the
  command to run there. A failed ``dpkg -i`` (a dependency missing) is reported with the
  command that mends it; the device then runs its models on the CPU.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import PurePosixPath

from appliance.modelstore.hashing import sha256_file
from provisioning.actions import Action, Kind, Status
from provisioning.bundle import Bundle, VendorFile
from provisioning.layout import Layout
from provisioning.live_steps import Which
from provisioning.vendor_files import VENDOR, DebName, deb_name

logger = logging.getLogger(__name__)

FILE_MODE = 0o644
DPKG_STATUS = PurePosixPath("/var/lib/dpkg/status")
CPU_MEANWHILE = "until then the Coral's models run on the CPU"


def vendor_dir(layout: Layout) -> PurePosixPath:
    """``/opt/mirror/vendor``, beside the venv and its wheels."""
    return layout.venv.parent / VENDOR


def installed_packages(layout: Layout) -> dict[str, str]:
    """Package -> version of what dpkg has installed in the root (``/var/lib/dpkg/status``)."""
    try:
        text = layout.host(DPKG_STATUS).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    found: dict[str, str] = {}
    for stanza in text.split("\n\n"):
        fields = dict(
            line.split(":", 1) for line in stanza.splitlines() if ":" in line and line[0] != " "
        )
        fields = {key.strip(): value.strip() for key, value in fields.items()}
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            found[fields["Package"]] = fields.get("Version", "")
    return found


def _has(installed: dict[str, str], deb: DebName) -> bool:
    have = installed.get(deb.package)
    return have is not None and (have == deb.version or have.endswith(f":{deb.version}"))


def _copy(layout: Layout, target: PurePosixPath, vendor: VendorFile, kind: str) -> Action:
    host = layout.host(target)
    status: Status = "create"
    if host.is_file():
        same = sha256_file(host) == vendor.file.sha256 and host.stat().st_mode & 0o777 == FILE_MODE
        status = "unchanged" if same else "update"
    action_kind: Kind = "vendor" if kind == "deb" else "model"
    return Action(action_kind, target, status, mode=FILE_MODE, source=vendor.file)


def _package(layout: Layout, deb_file: PurePosixPath, deb: DebName, which: Which) -> Action:
    argv = ("dpkg", "-i", str(deb_file))
    run = " ".join(argv)
    if not layout.is_live():
        note = (
            f"not run in a mounted root: on the device, run `{run}` (then `apt-get install -f` "
            f"for its dependencies); {CPU_MEANWHILE}"
        )
        return Action("package", deb_file, "deferred", names=(deb.package,), note=note)
    if which("dpkg") is None:
        note = f"dpkg not found here: install {deb_file} by hand; {CPU_MEANWHILE}"
        return Action("package", deb_file, "deferred", names=(deb.package,), note=note)
    status: Status = "unchanged" if _has(installed_packages(layout), deb) else "create"
    note = f"{deb.package} {deb.version}"
    return Action("package", deb_file, status, names=(run,), note=note, commands=(argv,))


def plan_vendor(layout: Layout, bundle: Bundle, *, which: Which = shutil.which) -> list[Action]:
    """The copies (and dpkg runs) of the bundle's vendor models and packages."""
    actions: list[Action] = []
    for model in bundle.vendor_of("edgetpu-model"):
        actions.append(_copy(layout, layout.models_dir / model.name, model, "model"))
    debs = bundle.vendor_of("deb")
    if debs:
        folder = vendor_dir(layout)
        status: Status = "unchanged" if layout.host(folder).is_dir() else "create"
        actions.append(Action("dir", folder, status, mode=0o755))
    for deb in debs:
        target = vendor_dir(layout) / deb.name
        actions.append(_copy(layout, target, deb, "deb"))
        actions.append(_package(layout, target, deb_name(deb.name), which))
    return actions
