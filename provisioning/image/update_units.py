"""The systemd units and udev rule of A/B updates on the image.

- ``mirror-update-confirm.service`` (every boot): ``mirror update confirm``; keeps the
  booted slot once the mirror is healthy on it, or goes back (:mod:`provisioning.update.confirm`);
- ``mirror-update.path`` -> ``mirror-update.service`` (root): the admin page's request;
- ``mirror-update-usb@.service`` started by a udev rule for each file system on a USB
  stick: ``mirror update usb /dev/%I``;
- a D-Bus policy that lets only root install or mark slots (RAUC's own lets any local
  user); anyone may still read the slots' status (the admin page shows it).
"""

from __future__ import annotations

import logging
from pathlib import Path, PurePosixPath

from provisioning.layout import DATA_DIR, DEFAULT_VENV

logger = logging.getLogger(__name__)

SYSTEMD = PurePosixPath("/etc/systemd/system")
CONFIRM_UNIT = "mirror-update-confirm.service"
USB_RULES = PurePosixPath("/etc/udev/rules.d/80-mirror-update-usb.rules")
DBUS_POLICY = PurePosixPath("/etc/dbus-1/system.d/mirror-rauc.conf")
REQUEST = DATA_DIR / "updates" / "request.json"


def units(venv: PurePosixPath = DEFAULT_VENV) -> dict[str, str]:
    mirror = f"{venv}/bin/mirror"
    return {
        CONFIRM_UNIT: f"""\
# Written by `mirror image build`: keep this A/B slot only if the mirror is healthy on it.
[Unit]
Description=Mirror: confirm the booted A/B slot (or go back to the other)
After=mirror-firstboot.service rauc.service
ConditionKernelCommandLine=rauc.slot

[Service]
Type=exec
ExecStart={mirror} update confirm
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
""",
        "mirror-update.path": f"""\
# Written by `mirror image build`: the admin page asked for an update.
[Unit]
Description=Mirror: an update asked for on the admin page

[Path]
PathExists={REQUEST}

[Install]
WantedBy=multi-user.target
""",
        "mirror-update.service": f"""\
# Written by `mirror image build`: install the update the admin page asked for (as root).
[Unit]
Description=Mirror: install the update asked for on the admin page

[Service]
Type=oneshot
ExecStart={mirror} update run-queued
StandardOutput=journal+console
StandardError=journal+console
""",
        "mirror-update-usb@.service": f"""\
# Written by `mirror image build`: a USB stick with an update bundle was plugged in.
[Unit]
Description=Mirror: install the update bundle on USB stick %I
After=mirror-firstboot.service rauc.service

[Service]
Type=oneshot
ExecStart={mirror} update usb /dev/%I
StandardOutput=journal+console
StandardError=journal+console
""",
    }


USB_RULE = """\
# Written by `mirror image build`: a file system on a USB stick may hold an update bundle.
ACTION=="add", SUBSYSTEM=="block", ENV{ID_BUS}=="usb", ENV{ID_FS_USAGE}=="filesystem", \\
  TAG+="systemd", ENV{SYSTEMD_WANTS}+="mirror-update-usb@%k.service"
"""

DBUS_TEXT = """\
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<!-- Written by `mirror image build`: only root installs bundles or marks slots;
     anyone may read the status (RAUC's own policy lets anyone do anything). -->
<busconfig>
  <policy context="default">
    <deny send_destination="de.pengutronix.rauc"/>
    <allow send_destination="de.pengutronix.rauc"
           send_interface="org.freedesktop.DBus.Properties" send_member="Get"/>
    <allow send_destination="de.pengutronix.rauc"
           send_interface="org.freedesktop.DBus.Properties" send_member="GetAll"/>
    <allow send_destination="de.pengutronix.rauc"
           send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="de.pengutronix.rauc"
           send_interface="de.pengutronix.rauc.Installer" send_member="GetSlotStatus"/>
    <allow send_destination="de.pengutronix.rauc"
           send_interface="de.pengutronix.rauc.Installer" send_member="GetPrimary"/>
  </policy>
  <policy user="root">
    <allow send_destination="de.pengutronix.rauc"/>
  </policy>
</busconfig>
"""


def add_update_units(root: Path, venv: PurePosixPath = DEFAULT_VENV) -> None:
    def write(path: PurePosixPath, text: str) -> None:
        host = root / str(path).lstrip("/")
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_text(text, encoding="utf-8")

    for name, text in units(venv).items():
        write(SYSTEMD / name, text)
    wants = root / str(SYSTEMD).lstrip("/") / "multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    for name in (CONFIRM_UNIT, "mirror-update.path"):
        link = wants / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(f"{SYSTEMD}/{name}")
    write(USB_RULES, USB_RULE)
    write(DBUS_POLICY, DBUS_TEXT)
