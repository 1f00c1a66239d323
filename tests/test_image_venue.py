"""The venue file and `mirror image firstboot` on a temporary root (a real CLI subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from provisioning.image.firstboot import apply_venue, device_suffix, wpa_psk
from provisioning.image.venue import TEMPLATE, Venue, parse_venue, read_venue

ZONES = Path("/usr/share/zoneinfo")
pytestmark = pytest.mark.skipif(not (ZONES / "Europe/London").is_file(), reason="no tzdata")


def _root(tmp_path: Path, machine_id: str = "0123456789abcdef0123456789abcdef") -> Path:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/machine-id").write_text(machine_id + "\n")
    web = root / "var/lib/mirror/web"
    web.mkdir(parents=True)
    (web / "web.yaml").write_text("host: 0.0.0.0\nport: 8000\n")
    return root


def _ssh_key(tmp_path: Path) -> str:
    key = tmp_path / "id"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return key.with_suffix(".pub").read_text().strip()


def test_the_template_is_a_valid_file_of_defaults() -> None:
    assert parse_venue(TEMPLATE, ZONES) == Venue()


def test_wpa_psk_is_the_ieee_802_11i_test_vector() -> None:
    # IEEE 802.11i-2004, annex H.4: passphrase "password", SSID "IEEE"
    expected = "f42c6fc52df0ebef9ebb4b90b38a5f902e83fe1b135a70e23aed762e9710a12e"
    assert wpa_psk("IEEE", "password") == expected


def test_a_full_venue_is_applied_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    root = _root(tmp_path)
    key = _ssh_key(tmp_path)
    text = yaml.safe_dump(
        {
            "hostname": "mirror-lobby",
            "wifi": {"ssid": "Venue Guest", "passphrase": "correct horse", "country": "GB"},
            "ssh_authorized_key": key,
            "timezone": "Europe/London",
            "admin_port": 8080,
        }
    )
    venue = parse_venue(text, ZONES)
    done = apply_venue(root, venue)
    assert done.hostname == "mirror-lobby"
    assert (root / "etc/hostname").read_text() == "mirror-lobby\n"
    wpa = (root / "etc/wpa_supplicant/wpa_supplicant-wlan0.conf").read_text()
    assert "country=GB" in wpa and wpa_psk("Venue Guest", "correct horse") in wpa
    assert "correct horse" not in wpa  # only the PSK is stored
    assert (root / "etc/wpa_supplicant/wpa_supplicant-wlan0.conf").stat().st_mode & 0o777 == 0o600
    wants = root / "etc/systemd/system/multi-user.target.wants"
    assert (wants / "wpa_supplicant@wlan0.service").is_symlink()
    assert (wants / "ssh.service").is_symlink()
    assert (root / "root/.ssh/authorized_keys").read_text() == key + "\n"
    assert not (root / "etc/ssh/sshd_not_to_be_run").exists()
    assert list((root / "etc/ssh").glob("ssh_host_ed25519_key"))  # this device's own host keys
    assert os.readlink(root / "etc/localtime") == "/usr/share/zoneinfo/Europe/London"
    assert yaml.safe_load((root / "var/lib/mirror/web/web.yaml").read_text())["port"] == 8080
    assert set(done.start) == {"wpa_supplicant@wlan0.service", "ssh.service"}
    again = apply_venue(root, venue)
    assert again.changed == [] and again.start == ["ssh.service"]


def test_without_a_key_ssh_is_turned_off_again(tmp_path: Path) -> None:
    root = _root(tmp_path)
    apply_venue(root, parse_venue(f"ssh_authorized_key: '{_ssh_key(tmp_path)}'\n", ZONES))
    done = apply_venue(root, Venue())
    assert not (root / "etc/systemd/system/multi-user.target.wants/ssh.service").exists()
    assert not (root / "root/.ssh/authorized_keys").exists()
    assert (root / "etc/ssh/sshd_not_to_be_run").is_file()  # Debian's switch: ssh.socket too
    assert done.stop == ["ssh.service"]


def test_hostname_from_the_pi_serial_else_the_machine_id(tmp_path: Path) -> None:
    root = _root(tmp_path)
    assert device_suffix(root) == "abcdef"
    serial = root / "sys/firmware/devicetree/base/serial-number"
    serial.parent.mkdir(parents=True)
    serial.write_bytes(b"10000000c0ffee42\0")
    assert apply_venue(root, Venue()).hostname == "mirror-ffee42"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("admin_port: 80\n", "admin_port"),
        ("admin_port: true\n", "admin_port"),
        ("timezone: Mars/Olympus\n", "timezone"),
        ("timezone: ../../etc/passwd\n", "timezone"),
        ("hostname: Bad_Name\n", "hostname"),
        ("wifi: {ssid: x, passphrase: short, country: GB}\n", "wifi.passphrase"),
        ("wifi: {ssid: x, passphrase: longenough, country: gb}\n", "wifi.country"),
        ("ssh_authorized_key: 'ssh-ed25519 notakey'\n", "ssh_authorized_key"),
        ("wlan: {}\n", "wlan"),
        ("hostname: [\n", "YAML"),
        ("- a list\n", "key: value"),
    ],
)
def test_a_bad_file_names_the_problem_and_gives_the_defaults(
    tmp_path: Path, text: str, named: str
) -> None:
    path = tmp_path / "mirror.yaml"
    path.write_text(text)
    venue, problem = read_venue(path, ZONES)
    assert venue == Venue()
    assert problem is not None and named in problem and "defaults" in problem


def test_firstboot_command_reports_a_bad_file_once_and_applies_the_defaults(
    tmp_path: Path,
) -> None:
    root = _root(tmp_path)
    (root / "usr/share").mkdir(parents=True)
    (root / "usr/share/zoneinfo").symlink_to(ZONES)
    boot = root / "boot/firmware/mirror.yaml"
    boot.parent.mkdir(parents=True)
    boot.write_text("admin_port: 99999\nwifi: {ssid: Cafe, passphrase: longenough, country: GB}\n")
    env = {**os.environ, "MIRROR_DATA_DIR": str(tmp_path / "data")}
    cmd = [sys.executable, "-m", "appliance.cli.main", "image", "firstboot", "--root", str(root)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "admin_port" in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    assert (root / "etc/hostname").read_text() == "mirror-abcdef\n"
    assert yaml.safe_load((root / "var/lib/mirror/web/web.yaml").read_text())["port"] == 8000
    assert not (root / "etc/wpa_supplicant/wpa_supplicant-wlan0.conf").exists()
    assert (root / "etc/systemd/network/20-mirror-wired.network").is_file()
