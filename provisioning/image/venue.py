"""The installer's venue file on the boot partition (``/boot/firmware/mirror.yaml``).

Editable on any computer before or after flashing (the boot partition is FAT).
Every key is optional; a file that cannot be read or has one bad value is
reported (one line naming the key and its line in the file) and the device comes up
with every default: Ethernet by DHCP, no Wi-Fi, SSH off, UTC, the admin page on port 8000.
"""

from __future__ import annotations

import logging
import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from provisioning.errors import VenueError

logger = logging.getLogger(__name__)

T = TypeVar("T")

MAX_BYTES = 16 * 1024
_HOSTNAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")
_ZONE = re.compile(r"^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$")
KEYS = ("hostname", "wifi", "ssh_authorized_key", "timezone", "admin_port")
WIFI_KEYS = ("ssid", "passphrase", "country")

TEMPLATE = """\
# Face-swap mirror: settings for this venue, read at every boot.
# Edit on any computer (this is the card's small FAT partition), then power on.
# A mistake here is shown on the screen and in the journal, and the mirror
# starts with the defaults. Ethernet always gets its address by DHCP.

# hostname: mirror-lobby          # default: mirror- and the end of the serial number

# wifi:
#   ssid: "Venue Guest"
#   passphrase: "at least 8 characters"
#   country: GB                   # two letters: the radio rules of this country

# SSH stays off unless a public key is given here (login as root with that key):
# ssh_authorized_key: "ssh-ed25519 AAAA... installer@laptop"

# timezone: Europe/London         # default: Etc/UTC
# admin_port: 8000                # the admin web page's port (1024-65535)
"""


@dataclass(frozen=True)
class Wifi:
    ssid: str
    passphrase: str
    country: str


@dataclass(frozen=True)
class Venue:
    hostname: str | None = None
    wifi: Wifi | None = None
    ssh_authorized_key: str | None = None
    timezone: str = "Etc/UTC"
    admin_port: int = 8000


def _text(data: dict[str, Any], key: str, where: str = "") -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise VenueError(f"{where}{key} must be text in quotes, not {value!r}")
    return value


def _hostname(value: str | None) -> str | None:
    if value is None:
        return None
    if not _HOSTNAME.match(value):
        raise VenueError(f"hostname {value!r}: use a-z, 0-9 and '-', at most 63 characters")
    return value


def _wifi(value: object) -> Wifi | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise VenueError("wifi must hold ssid, passphrase and country")
    unknown = sorted(set(map(str, value)) - set(WIFI_KEYS))
    if unknown:
        raise VenueError(f"wifi: unknown key {unknown[0]!r} (known: {', '.join(WIFI_KEYS)})")
    ssid = _text(value, "ssid", "wifi.") or ""
    passphrase = _text(value, "passphrase", "wifi.") or ""
    country = _text(value, "country", "wifi.") or ""
    if not 1 <= len(ssid.encode("utf-8")) <= 32:
        raise VenueError("wifi.ssid must be 1 to 32 bytes")
    if not (8 <= len(passphrase) <= 63 and passphrase.isascii() and passphrase.isprintable()):
        raise VenueError("wifi.passphrase must be 8 to 63 printable ASCII characters")
    if not _COUNTRY.match(country):
        raise VenueError(f"wifi.country {country!r}: two capital letters, e.g. GB, DE, US")
    return Wifi(ssid, passphrase, country)


def _ssh_key(value: str | None) -> str | None:
    if value is None:
        return None
    line = value.strip()
    if "\n" in line or not line:
        raise VenueError("ssh_authorized_key must be one public key line")
    with tempfile.NamedTemporaryFile("w", suffix=".pub") as key:
        key.write(line + "\n")
        key.flush()
        checked = subprocess.run(
            ["ssh-keygen", "-l", "-f", key.name], capture_output=True, text=True, check=False
        )
    if checked.returncode != 0:
        raise VenueError("ssh_authorized_key is not an SSH public key (ssh-keygen -l refuses it)")
    return line


def _timezone(value: str | None, zoneinfo: Path) -> str:
    if value is None:
        return Venue.timezone
    if not _ZONE.match(value) or ".." in value or not (zoneinfo / value).is_file():
        raise VenueError(f"timezone {value!r} is not a known zone (e.g. Europe/London)")
    return value


def _port(value: object) -> int:
    if value is None:
        return Venue.admin_port
    if isinstance(value, bool) or not isinstance(value, int) or not 1024 <= value <= 65535:
        raise VenueError(f"admin_port {value!r} must be a number from 1024 to 65535")
    return value


def _key_lines(text: str) -> dict[str, int]:
    """The line (from 1) of each top-level key, for the problem's message."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {
        str(key.value): key.start_mark.line + 1
        for key, _ in node.value
        if isinstance(key, yaml.ScalarNode)
    }


def _at(lines: dict[str, int], key: str, check: Callable[[], T]) -> T:
    """``check()``, its VenueError led by the key's line in the file."""
    try:
        return check()
    except VenueError as exc:
        if key not in lines:
            raise
        raise VenueError(f"line {lines[key]}: {exc}") from exc


def parse_venue(text: str, zoneinfo: Path) -> Venue:
    """The venue in ``text``; a :class:`VenueError` naming the first bad key and its line."""
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise VenueError(f"the file is over {MAX_BYTES} bytes")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise VenueError(f"{where}not valid YAML") from exc
    if data is None:
        return Venue()
    if not isinstance(data, dict):
        raise VenueError("the file must hold 'key: value' lines")
    lines = _key_lines(text)
    unknown = sorted(set(map(str, data)) - set(KEYS))
    if unknown:
        known = ", ".join(KEYS)
        _at(lines, unknown[0], lambda: _raise(f"unknown key {unknown[0]!r} (known: {known})"))
    return Venue(
        hostname=_at(lines, "hostname", lambda: _hostname(_text(data, "hostname"))),
        wifi=_at(lines, "wifi", lambda: _wifi(data.get("wifi"))),
        ssh_authorized_key=_at(
            lines, "ssh_authorized_key", lambda: _ssh_key(_text(data, "ssh_authorized_key"))
        ),
        timezone=_at(lines, "timezone", lambda: _timezone(_text(data, "timezone"), zoneinfo)),
        admin_port=_at(lines, "admin_port", lambda: _port(data.get("admin_port"))),
    )


def _raise(message: str) -> None:
    raise VenueError(message)


def read_venue(path: Path, zoneinfo: Path) -> tuple[Venue, str | None]:
    """The venue file's settings, or the defaults and the problem (None when all is well):
    one line for the journal and the HDMI screen, e.g. ``mirror.yaml on the boot partition:
    line 3: admin_port 70 must be a number from 1024 to 65535; defaults used``."""
    where = f"{path.name} on the boot partition"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Venue(), None
    except OSError as exc:
        return Venue(), f"{where}: cannot be read ({exc.strerror}); defaults used"
    try:
        return parse_venue(raw.decode("utf-8"), zoneinfo), None
    except UnicodeDecodeError:
        return Venue(), f"{where}: not UTF-8 text; defaults used"
    except VenueError as exc:
        return Venue(), f"{where}: {exc}; defaults used"
