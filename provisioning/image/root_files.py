"""What the image adds to a provisioned root so that each device makes itself its own.

- ``mirror-firstboot.service`` (every boot, before the network and the mirror):
  ``mirror image firstboot`` (see :mod:`provisioning.image.firstboot`);
- the venue file's template on the boot partition, ``/etc/fstab`` by label,
  systemd-networkd (Ethernet by DHCP) and systemd-resolved enabled;
- nothing unique: ``/etc/machine-id`` says ``uninitialized`` (systemd makes the ID
  at the first boot), no SSH host keys and SSH disabled, no random seed, no
  admin password or session key (``mirror run`` makes those at its first start);
- ``systemd-firstboot`` masked: it would ask on the console for what the image sets.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path, PurePosixPath

from provisioning.image.firstboot import SSH_OFF, SSH_OFF_TEXT, WIRED, WIRED_TEXT
from provisioning.image.spec import BOOT_LABEL, ROOT_LABEL
from provisioning.image.venue import TEMPLATE
from provisioning.layout import DEFAULT_VENV, Layout

logger = logging.getLogger(__name__)

FIRSTBOOT_UNIT = PurePosixPath("/etc/systemd/system/mirror-firstboot.service")
VENUE_FILE = PurePosixPath("/boot/firmware/mirror.yaml")
WANTS = PurePosixPath("/etc/systemd/system")
FSTAB = (
    f"LABEL={ROOT_LABEL}\t/\text4\tdefaults,noatime\t0\t1\n"
    f"LABEL={BOOT_LABEL}\t/boot/firmware\tvfat\tdefaults,umask=0077\t0\t2\n"
)
ENABLED = (
    ("multi-user.target.wants", "systemd-networkd.service"),
    ("sockets.target.wants", "systemd-networkd.socket"),
    ("network-online.target.wants", "systemd-networkd-wait-online.service"),
    ("multi-user.target.wants", "systemd-resolved.service"),
    ("multi-user.target.wants", "mirror-firstboot.service"),
)
SSH_LINKS = (
    "/etc/systemd/system/multi-user.target.wants/ssh.service",
    "/etc/systemd/system/sshd.service",
    "/etc/systemd/system/sockets.target.wants/ssh.socket",
)
# Files that would make every card the same device (or hold a secret): never in an image.
UNIQUE = (
    "/etc/ssh/ssh_host_*",
    "/var/lib/systemd/random-seed",
    "/var/lib/dbus/machine-id",
    "/var/lib/systemd/credential.secret",
    "/var/log/journal/*",
    "/root/.ssh/authorized_keys",
    "/var/cache/apt/archives/*.deb",
)


def firstboot_unit(venv: PurePosixPath = DEFAULT_VENV) -> str:
    return f"""\
# Written by `mirror image build`: this device's hostname, the venue's network, SSH,
# time zone and admin port (from {VENUE_FILE}), and the root grown to fill the card.
[Unit]
Description=Mirror: make this device its own and apply the venue file
DefaultDependencies=no
After=local-fs.target systemd-remount-fs.service systemd-machine-id-commit.service
Before=network-pre.target systemd-networkd.service systemd-hostnamed.service
Before=ssh.service mirror.service sysinit.target
Wants=network-pre.target
Conflicts=shutdown.target
Before=shutdown.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart={venv}/bin/mirror image firstboot --boot-file {VENUE_FILE}
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
"""


def _write(root: Path, path: str | PurePosixPath, text: str, mode: int = 0o644) -> None:
    host = root / str(path).lstrip("/")
    host.parent.mkdir(parents=True, exist_ok=True)
    host.write_text(text, encoding="utf-8")
    os.chmod(host, mode)


def _link(root: Path, path: str, target: str) -> None:
    host = root / path.lstrip("/")
    host.parent.mkdir(parents=True, exist_ok=True)
    if host.is_symlink() or host.exists():
        host.unlink()
    host.symlink_to(target)


def add_image_files(root: Path, venv: PurePosixPath = DEFAULT_VENV) -> None:
    _write(root, FIRSTBOOT_UNIT, firstboot_unit(venv))
    _write(root, VENUE_FILE, TEMPLATE)
    _write(root, "/etc/fstab", FSTAB)
    _write(root, WIRED, WIRED_TEXT)
    _write(root, "/etc/hostname", "mirror\n")
    # raspi-firmware rewrites cmdline.txt at each kernel update from these words: the
    # console's cursor stays off the mirror's framebuffer after an update too
    _write(root, "/etc/default/raspi-extra-cmdline", "vt.global_cursor_default=0\n")
    for wants, unit in ENABLED:
        where = "/etc/systemd/system" if unit.startswith("mirror-") else "/lib/systemd/system"
        _link(root, f"/etc/systemd/system/{wants}/{unit}", f"{where}/{unit}")
    _link(root, "/etc/systemd/system/systemd-firstboot.service", "/dev/null")
    resolv = root / "etc/resolv.conf"
    if resolv.is_symlink() or resolv.exists():
        resolv.unlink()
    resolv.symlink_to("../run/systemd/resolve/stub-resolv.conf")
    make_anonymous(root)


def make_anonymous(root: Path) -> None:
    """Remove what is unique to one machine; the machine-id is made at the first boot."""
    for link in SSH_LINKS:
        host = root / link.lstrip("/")
        if host.is_symlink() or host.exists():
            host.unlink()
    for pattern in UNIQUE:
        for found in root.glob(pattern.lstrip("/")):
            if found.is_dir() and not found.is_symlink():
                shutil.rmtree(found)
            else:
                found.unlink()
    _write(root, "/etc/machine-id", "uninitialized\n", 0o444)
    _write(root, SSH_OFF, SSH_OFF_TEXT)
    (root / "var/log/journal").mkdir(parents=True, exist_ok=True)  # a persistent journal


def secrets_in(root: Path, layout: Layout | None = None) -> list[str]:
    """Every secret or per-device file found under ``root`` (none may be in an image)."""
    layout = layout or Layout(root=root)
    found = [
        str(path)
        for path in (layout.auth, layout.secret_key, layout.first_boot)
        if layout.host(path).exists()
    ]
    for pattern in UNIQUE:
        found += [f"/{p.relative_to(root)}" for p in root.glob(pattern.lstrip("/"))]
    machine_id = (root / "etc/machine-id").read_text(encoding="utf-8").strip()
    if machine_id not in ("", "uninitialized"):
        found.append(f"/etc/machine-id ({machine_id})")
    return found
