"""What the image adds to a provisioned root so that each device makes itself its own.

- ``mirror-firstboot.service`` (every boot, before the network and the mirror):
  ``mirror image firstboot`` (see :mod:`provisioning.image.firstboot`);
- the venue file's template on the boot partition, ``/etc/fstab`` by label,
  systemd-networkd (Ethernet by DHCP) and systemd-resolved enabled;
- nothing unique: ``/etc/machine-id`` says ``uninitialized`` (systemd makes the ID
  at the first boot), no SSH host keys and SSH disabled, no random seed, no
  admin password or session key (``mirror run`` makes those at its first start);
- ``systemd-firstboot`` masked: it would ask on the console for what the image sets;
- systemd feeds the SoC's hardware watchdog (``RuntimeWatchdogSec``; Debian's
  ``bcm2835_wdt`` module, loaded by udev for the power-management block's
  ``bcm2835-wdt`` device): a hung kernel or a systemd that stops answering reboots
  the device, where the service's own watchdog only restarts the service;
- the journal stays on the card (the first start's password, what happened before a
  reboot) but capped, written in bulk every 5 minutes (errors at once) and
  compressed, so months of a kiosk's logging neither fill nor wear the card.

The kernel command line's screen mode and console words come from ``mirror
provision`` (:mod:`provisioning.console`), into ``cmdline.txt`` and raspi-firmware's
``/etc/default/raspi-extra-cmdline``, so they stay after a kernel update.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path, PurePosixPath

from provisioning.image.firstboot import SSH_OFF, SSH_OFF_TEXT, WIRED, WIRED_TEXT
from provisioning.image.spec import BOOT_LABEL, DATA_LABEL, DATA_MOUNT
from provisioning.image.venue import TEMPLATE
from provisioning.layout import DEFAULT_VENV, Layout

logger = logging.getLogger(__name__)

FIRSTBOOT_UNIT = PurePosixPath("/etc/systemd/system/mirror-firstboot.service")
VENUE_FILE = PurePosixPath("/boot/firmware/mirror.yaml")
WANTS = PurePosixPath("/etc/systemd/system")
# The root is the one the slot's cmdline.txt names (root=PARTUUID=...): no line for it. The
# shared FAT partition (autoboot.txt, the venue file) and the data partition are the same for
# both slots; /var/lib/mirror and the journal live on the data partition.
FSTAB = (
    f"LABEL={BOOT_LABEL}\t/boot/firmware\tvfat\tdefaults,umask=0077\t0\t2\n"
    f"LABEL={DATA_LABEL}\t{DATA_MOUNT}\text4\tdefaults,noatime\t0\t2\n"
    f"{DATA_MOUNT}/mirror\t/var/lib/mirror\tnone\tbind\t0\t0\n"
    f"{DATA_MOUNT}/journal\t/var/log/journal\tnone\tbind\t0\t0\n"
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
WATCHDOG_CONF = PurePosixPath("/etc/systemd/system.conf.d/mirror-watchdog.conf")
WATCHDOG_TEXT = """\
# Written by `mirror image build`: systemd pings the hardware watchdog (bcm2835_wdt);
# the SoC resets if it stops for 15 s (the Pi's watchdog allows up to 15 s).
[Manager]
RuntimeWatchdogSec=15s
RebootWatchdogSec=2min
"""
JOURNAL_CONF = PurePosixPath("/etc/systemd/journald.conf.d/mirror.conf")
JOURNAL_TEXT = """\
# Written by `mirror image build`: kept on the card, but capped and written in bulk.
[Journal]
Storage=persistent
Compress=yes
SystemMaxUse=64M
SystemKeepFree=256M
SyncIntervalSec=5m
"""
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
    _write(root, WATCHDOG_CONF, WATCHDOG_TEXT)
    _write(root, JOURNAL_CONF, JOURNAL_TEXT)
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
