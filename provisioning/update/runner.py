"""The root-run installers: the admin page's queued request, and a USB stick plugged in.

``mirror update run-queued`` (``mirror-update.service``, started by ``mirror-update.path``
when the web app leaves ``request.json``) and ``mirror update usb /dev/sdX1``
(``mirror-update-usb@.service``, started by a udev rule for a USB file system) both
install through :func:`provisioning.update.install.install_update` and write their
progress to ``status.json`` (:mod:`appliance.updates.queue`), which the admin page and
the HDMI screen show. A stick is mounted read-only and must hold one ``.raucb`` at its
top; a bundle this mirror already runs, or one whose trial failed here, is not installed
again (a stick left in would otherwise install it at every boot).
"""

from __future__ import annotations

import logging
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from appliance.updates.queue import StatusWriter, take_request
from appliance.updates.slots import SlotsStatus, UpdateUnavailableError, slots_status
from provisioning.errors import ImageError, UpdateError
from provisioning.image.tryboot import booted_slot, read_slots
from provisioning.update import rauc_cli
from provisioning.update.install import install_update

logger = logging.getLogger(__name__)

MOUNT_ROOT = Path("/run/mirror")
BOOT_DIR = Path("/boot/firmware")

Install = Callable[..., object]
Echo = Callable[[str], None] | None


def run_queued(data_dir: Path, install: Install = install_update, echo: Echo = None) -> bool:
    """Install the waiting request, if any; whether one was installed."""
    request = take_request(data_dir)
    if request is None:
        return False
    say = StatusWriter(data_dir, request.source, echo=echo)
    say(f"update asked for by {request.requested_by}: {request.source}")
    try:
        install(request.source, _rebooting(say), download_dir=data_dir / "updates")
    except UpdateError as exc:
        say.set_state("failed", str(exc))
        return False
    finally:
        if not request.source.startswith(("http://", "https://")):
            Path(request.source).unlink(missing_ok=True)
    return True


def _rebooting(say: StatusWriter) -> Callable[[str], None]:
    def said(message: str) -> None:
        if message.startswith("rebooting"):
            say.set_state("rebooting", message)
        elif message.startswith("version ") and "installed" in message:
            say.set_state("done", message)
        else:
            say(message)

    return said


def _bundles_on(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix == ".raucb" and p.is_file())


def why_not_again(
    version: str, status: SlotsStatus, boot_dir: Path = BOOT_DIR, cmdline: Path | None = None
) -> str:
    """Why a bundle of ``version`` is not installed from a stick; "" when it may be."""
    booted = booted_slot(cmdline) if cmdline is not None else booted_slot()
    for slot in status.slots:
        if slot.version != version:
            continue
        if slot.bootname == booted:
            return f"this mirror already runs {version}"
        if not slot.boot_good:
            return f"{version} failed its trial on this mirror; it is not installed again"
    try:
        slots = read_slots(boot_dir)
    except ImageError:  # no autoboot.txt: nothing on trial
        return ""
    if slots.trial is not None and slots.trial != booted and slots.committed == booted:
        return f"the update in slot {slots.trial} did not start; remove the stick and retry"
    return ""


def install_from_stick(
    device: str,
    data_dir: Path,
    install: Install = install_update,
    mount_root: Path = MOUNT_ROOT,
    echo: Echo = None,
) -> bool:
    """Mount ``device`` read-only, install the one bundle at its top; whether it did."""
    say = StatusWriter(data_dir, device, echo=echo)
    mount_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="usb-", dir=mount_root) as where:
        folder = Path(where)
        options = "ro,nosuid,nodev,noexec"
        mounted = subprocess.run(
            ["mount", "-o", options, device, str(folder)],
            capture_output=True,
            text=True,
            check=False,
        )
        if mounted.returncode != 0:
            logger.info("%s not mounted: %s", device, mounted.stderr.strip())
            return False  # not a file system this mirror reads: not an update stick
        try:
            return _from_folder(folder, device, data_dir, say, install)
        finally:
            subprocess.run(["umount", str(folder)], capture_output=True, check=False)


def _from_folder(
    folder: Path, device: str, data_dir: Path, say: StatusWriter, install: Install
) -> bool:
    bundles = _bundles_on(folder)
    if not bundles:
        logger.info("%s holds no .raucb: not an update stick", device)
        return False
    if len(bundles) > 1:
        names = ", ".join(b.name for b in bundles)
        say.set_state("failed", f"the USB stick holds {len(bundles)} bundles ({names}): keep one")
        return False
    say(f"USB stick {device}: {bundles[0].name}")
    try:
        info = rauc_cli.check_bundle(bundles[0])
        try:
            why = why_not_again(info.version, slots_status())
        except UpdateUnavailableError as exc:
            raise UpdateError(str(exc)) from exc
        if why:
            say.set_state("done", f"{bundles[0].name}: {why}")
            return False
        install(str(bundles[0]), _rebooting(say), download_dir=data_dir / "updates")
    except UpdateError as exc:
        say.set_state("failed", str(exc))
        return False
    return True
