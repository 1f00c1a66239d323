"""At every boot of an image (``mirror image firstboot``): make the device its own, apply the venue.

Run by ``mirror-firstboot.service`` before the network and the mirror start. It
is idempotent, so an installer can edit the venue file after the first boot too:

- the hostname: the venue's, else ``mirror-`` and the last 6 hex digits of the
  Pi's serial number (the device tree), else of the machine-id;
- Ethernet by DHCP always (systemd-networkd); Wi-Fi through ``wpa_supplicant@wlan0``
  with the passphrase stored only as its PSK (what ``wpa_passphrase`` writes);
- SSH only with the venue's public key: root's ``authorized_keys``, this device's own
  host keys (``ssh-keygen -A`` when there are none), ``ssh.service`` enabled;
  without a key SSH is disabled again;
- the time zone and the admin page's port (``web.yaml``).

The admin password and the session key are not made here: ``mirror run`` makes them at
its first start (the password on the HDMI screen and in the journal, once).
"""

from __future__ import annotations

import binascii
import hashlib
import logging
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml

from provisioning.image.venue import Venue

logger = logging.getLogger(__name__)

WIRED = PurePosixPath("/etc/systemd/network/20-mirror-wired.network")
WIRELESS = PurePosixPath("/etc/systemd/network/25-mirror-wireless.network")
WPA_CONF = PurePosixPath("/etc/wpa_supplicant/wpa_supplicant-wlan0.conf")
WANTS = PurePosixPath("/etc/systemd/system/multi-user.target.wants")
WPA_UNIT = "wpa_supplicant@wlan0.service"
SSH_UNIT = "ssh.service"
SERIALS = (
    PurePosixPath("/sys/firmware/devicetree/base/serial-number"),
    PurePosixPath("/proc/device-tree/serial-number"),
)
WEB_YAML = PurePosixPath("/var/lib/mirror/web/web.yaml")
# Debian's own switch: ssh.service and ssh.socket do not start while it exists
SSH_OFF = PurePosixPath("/etc/ssh/sshd_not_to_be_run")
SSH_OFF_TEXT = "SSH is off: give a public key in the venue file (mirror.yaml) to turn it on.\n"

WIRED_TEXT = (
    "# Written by the mirror image: Ethernet by DHCP.\n[Match]\nType=ether\n\n[Network]\nDHCP=yes\n"
)
WIRELESS_TEXT = (
    "# Written by mirror-firstboot (venue file: wifi).\n"
    "[Match]\nName=wlan0\n\n[Network]\nDHCP=yes\n"
)


@dataclass
class Applied:
    hostname: str
    changed: list[str] = field(default_factory=list)
    start: list[str] = field(default_factory=list)  # units to start on the live system
    stop: list[str] = field(default_factory=list)


def _host(root: Path, path: PurePosixPath) -> Path:
    return root / str(path).lstrip("/")


def _write(root: Path, path: PurePosixPath, text: str, mode: int, done: Applied) -> None:
    host = _host(root, path)
    data = text.encode("utf-8")
    if host.is_file() and host.read_bytes() == data and host.stat().st_mode & 0o777 == mode:
        return
    host.parent.mkdir(parents=True, exist_ok=True)
    temp = host.with_name(f".{host.name}.new")
    temp.write_bytes(data)
    os.chmod(temp, mode)
    os.replace(temp, host)
    done.changed.append(str(path))


def _remove(root: Path, path: PurePosixPath, done: Applied) -> None:
    host = _host(root, path)
    if host.is_symlink() or host.exists():
        host.unlink()
        done.changed.append(f"removed {path}")


def _link(root: Path, path: PurePosixPath, target: str, done: Applied) -> None:
    host = _host(root, path)
    if host.is_symlink() and os.readlink(host) == target:
        return
    host.parent.mkdir(parents=True, exist_ok=True)
    if host.is_symlink() or host.exists():
        host.unlink()
    host.symlink_to(target)
    done.changed.append(f"{path} -> {target}")


def device_suffix(root: Path) -> str:
    """The last 6 hex digits of the Pi's serial number, else of the machine-id."""
    for path in SERIALS:
        try:
            serial = _host(root, path).read_bytes().strip(b"\0\n ").decode("ascii").lower()
        except (OSError, UnicodeDecodeError):
            continue
        digits = "".join(c for c in serial if c in "0123456789abcdef")
        if len(digits) >= 6 and digits.strip("0"):
            return digits[-6:]
    machine_id = _host(root, PurePosixPath("/etc/machine-id")).read_text().strip()
    if len(machine_id) >= 6 and machine_id != "uninitialized":
        return machine_id[-6:]
    raise OSError("no serial number and no machine-id yet")


def wpa_psk(ssid: str, passphrase: str) -> str:
    """The 64-hex PSK of WPA2-Personal (IEEE 802.11i: PBKDF2-SHA1, 4096 rounds)."""
    key = hashlib.pbkdf2_hmac("sha1", passphrase.encode(), ssid.encode("utf-8"), 4096, 32)
    return key.hex()


def wpa_conf(venue: Venue) -> str:
    assert venue.wifi is not None
    wifi = venue.wifi
    ssid_hex = binascii.hexlify(wifi.ssid.encode("utf-8")).decode()
    return (
        "# Written by mirror-firstboot from the venue file (the passphrase only as its PSK).\n"
        "ctrl_interface=DIR=/run/wpa_supplicant GROUP=netdev\n"
        f"country={wifi.country}\n"
        "network={\n"
        f"    ssid={ssid_hex}\n"
        f"    psk={wpa_psk(wifi.ssid, wifi.passphrase)}\n"
        "}\n"
    )


def apply_venue(root: Path, venue: Venue) -> Applied:
    """Write the venue's settings under ``root``; what changed and what to start or stop."""
    name = venue.hostname or f"mirror-{device_suffix(root)}"
    done = Applied(hostname=name)
    _write(root, PurePosixPath("/etc/hostname"), f"{name}\n", 0o644, done)
    hosts = (
        f"127.0.0.1\tlocalhost\n127.0.1.1\t{name}\n::1\t\tlocalhost ip6-localhost ip6-loopback\n"
    )
    _write(root, PurePosixPath("/etc/hosts"), hosts, 0o644, done)
    _write(root, WIRED, WIRED_TEXT, 0o644, done)
    _network(root, venue, done)
    _ssh(root, venue, done)
    zone = f"/usr/share/zoneinfo/{venue.timezone}"
    _link(root, PurePosixPath("/etc/localtime"), zone, done)
    _write(root, PurePosixPath("/etc/timezone"), f"{venue.timezone}\n", 0o644, done)
    _port(root, venue.admin_port, done)
    return done


def _network(root: Path, venue: Venue, done: Applied) -> None:
    wants = WANTS / WPA_UNIT
    if venue.wifi is None:
        for path in (WPA_CONF, WIRELESS, wants):
            _remove(root, path, done)
        return
    before = len(done.changed)
    _write(root, WPA_CONF, wpa_conf(venue), 0o600, done)
    _write(root, WIRELESS, WIRELESS_TEXT, 0o644, done)
    _link(root, wants, "/lib/systemd/system/wpa_supplicant@.service", done)
    if len(done.changed) > before:
        done.start.append(WPA_UNIT)


def _ssh(root: Path, venue: Venue, done: Applied) -> None:
    keys = PurePosixPath("/root/.ssh/authorized_keys")
    links = (WANTS / SSH_UNIT, PurePosixPath("/etc/systemd/system/sshd.service"))
    if venue.ssh_authorized_key is None:
        was_on = _host(root, links[0]).is_symlink()
        for path in (keys, *links):
            _remove(root, path, done)
        _write(root, SSH_OFF, SSH_OFF_TEXT, 0o644, done)
        if was_on:
            done.stop.append(SSH_UNIT)
        return
    _host(root, PurePosixPath("/root/.ssh")).mkdir(mode=0o700, parents=True, exist_ok=True)
    _write(root, keys, venue.ssh_authorized_key + "\n", 0o600, done)
    ssh_dir = _host(root, PurePosixPath("/etc/ssh"))
    ssh_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
    if not any(ssh_dir.glob("ssh_host_*_key")):
        subprocess.run(["ssh-keygen", "-A", "-f", str(root)], check=True, capture_output=True)
        done.changed.append("SSH host keys made for this device")
    for path in links:
        _link(root, path, "/lib/systemd/system/ssh.service", done)
    _remove(root, SSH_OFF, done)
    done.start.append(SSH_UNIT)


def _port(root: Path, port: int, done: Applied) -> None:
    host = _host(root, WEB_YAML)
    try:
        current = yaml.safe_load(host.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        current = {}
    if not isinstance(current, dict):
        current = {}
    if current.get("port") == port:
        return
    wanted = {"host": current.get("host", "0.0.0.0"), "port": port}
    _write(root, WEB_YAML, yaml.safe_dump(wanted, sort_keys=False), 0o644, done)
