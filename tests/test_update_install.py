"""The installer's side of A/B updates that runs off the device: the signing pair, the CLI's
refusals, a bundle fetched over HTTP, the update queue and a USB stick's checks. RAUC's own
install, the trial boot and the rollback run in `make test-image` (a real card in QEMU)."""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from appliance.errors import InputError
from appliance.updates.queue import (
    StatusWriter,
    incoming_dir,
    read_status,
    request_install,
    take_request,
)
from appliance.updates.slots import SlotInfo, SlotsStatus, parse_status
from provisioning.errors import UpdateError
from provisioning.image.signing_keys import make_signing_pair
from provisioning.image.tryboot import BootSlots, write_slots
from provisioning.update.install import download
from provisioning.update.runner import _from_folder, why_not_again


def _mirror(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "appliance.cli.main", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def _one_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mirror: error: "), done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_keygen_makes_a_private_key_once_and_never_replaces_it(tmp_path: Path) -> None:
    done = _mirror("image", "keygen", "--out", str(tmp_path / "keys"))
    assert done.returncode == 0, done.stderr
    key = tmp_path / "keys/update-key.pem"
    assert key.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "keys/update-cert.pem").read_text().startswith("-----BEGIN CERTIFICATE")
    before = key.read_bytes()
    _one_error(_mirror("image", "keygen", "--out", str(tmp_path / "keys")), "made once and kept")
    assert key.read_bytes() == before


def test_an_image_build_needs_both_halves_of_the_signing_pair(tmp_path: Path) -> None:
    key, _cert = make_signing_pair(tmp_path)
    done = _mirror(
        "image", "build", "--profile", "rpi4-cpu", "--bundle", str(tmp_path),
        "--out", str(tmp_path / "x.img"), "--signing-key", str(key),
    )  # fmt: skip
    _one_error(done, "--signing-key and --signing-cert go together")


def test_update_install_off_an_ab_card_is_one_error_line(tmp_path: Path) -> None:
    bundle = tmp_path / "u.raucb"
    bundle.write_bytes(b"x")
    _one_error(_mirror("update", "install", str(bundle)), "not boot from an A/B slot")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    folder = tmp_path / "www"
    folder.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(folder), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", folder
    finally:
        server.shutdown()
        server.server_close()


def test_a_bundle_url_is_downloaded_whole_with_progress(
    tmp_path: Path, served: tuple[str, Path]
) -> None:
    base, www = served
    payload = os.urandom(3 * 1024 * 1024 + 17)
    (www / "n1.raucb").write_bytes(payload)
    said: list[str] = []
    got = download(f"{base}/n1.raucb", tmp_path / "updates", said.append)
    assert got.read_bytes() == payload and got.name == "n1.raucb"
    assert said[0].startswith("downloading n1.raucb:") and "100%" in said[-1]
    with pytest.raises(UpdateError, match=r"cannot download .*missing\.raucb"):
        download(f"{base}/missing.raucb", tmp_path / "updates", said.append)
    assert sorted(p.name for p in (tmp_path / "updates").iterdir()) == ["n1.raucb"]


def test_the_queue_takes_one_request_at_a_time_and_only_from_its_folder(tmp_path: Path) -> None:
    incoming = incoming_dir(tmp_path)
    incoming.mkdir(parents=True)
    bundle = incoming / "n1.raucb"
    bundle.write_bytes(b"bundle")
    with pytest.raises(InputError, match=r"as a \.raucb in"):
        request_install(tmp_path, "/etc/shadow", "staff")
    request_install(tmp_path, str(bundle), "staff")
    taken = take_request(tmp_path)
    assert taken is not None and taken.source == str(bundle.resolve())
    assert take_request(tmp_path) is None
    StatusWriter(tmp_path, str(bundle))(" 40% Copying image to rootfs.1")
    status = read_status(tmp_path)
    assert status is not None and status.busy and status.percent == 40
    with pytest.raises(InputError, match="already under way"):
        request_install(tmp_path, "https://fleet.example/n2.raucb", "staff")


RAUC_STATUS = """{"compatible":"face-mirror-rpi4","booted":"B","boot_primary":"rootfs.1",
"slots":[{"rootfs.0":{"class":"rootfs","device":"/dev/mmcblk0p5","type":"ext4",
"bootname":"A","state":"inactive","boot_status":"bad",
"slot_status":{"bundle":{"compatible":"face-mirror-rpi4","version":"1.5.0"}}}},
{"boot.0":{"class":"boot","state":"inactive","parent":"rootfs.0"}},
{"rootfs.1":{"class":"rootfs","device":"/dev/mmcblk0p6","type":"ext4","bootname":"B",
"state":"booted","boot_status":"good","slot_status":{"bundle":{"version":"1.4.0"},
"installed":{"timestamp":"2026-12-05T10:00:00Z"}}}}]}"""


def test_rauc_status_gives_both_slots_and_a_stick_does_not_install_twice(tmp_path: Path) -> None:
    status = parse_status(RAUC_STATUS)
    assert status.booted == "B" and status.primary == "B"
    assert [(s.bootname, s.version, s.boot_good) for s in status.slots] == [
        ("A", "1.5.0", False), ("B", "1.4.0", True),
    ]  # fmt: skip
    cmdline = tmp_path / "cmdline"
    cmdline.write_text("root=PARTUUID=6d697272-06 rauc.slot=B\n")
    boot = tmp_path / "firmware"
    boot.mkdir()
    write_slots(boot, BootSlots(committed="B"))
    assert "already runs 1.4.0" in why_not_again("1.4.0", status, boot, cmdline)
    assert "failed its trial" in why_not_again("1.5.0", status, boot, cmdline)
    assert why_not_again("1.6.0", status, boot, cmdline) == ""
    write_slots(boot, BootSlots(committed="B", trial="A"))  # reset during A's trial
    fresh = SlotsStatus("B", "A", (SlotInfo("rootfs.0", "A", "inactive", True, "", ""),))
    assert "did not start" in why_not_again("1.6.0", fresh, boot, cmdline)


@pytest.mark.skipif(shutil.which("rauc") is None, reason="apt-get install rauc")
def test_a_stick_with_two_bundles_or_a_foreign_signature_installs_nothing(tmp_path: Path) -> None:
    stick = tmp_path / "stick"
    stick.mkdir()
    (stick / "a.raucb").write_bytes(b"one")
    (stick / "b.raucb").write_bytes(b"two")
    installs: list[str] = []

    def install(source: str, *_args: object, **_kw: object) -> None:
        installs.append(source)

    writer = StatusWriter(tmp_path, "/dev/sda1")
    assert not _from_folder(stick, "/dev/sda1", tmp_path, writer, install)
    status = read_status(tmp_path)
    assert status is not None and status.state == "failed" and "keep one" in status.message
    (stick / "b.raucb").unlink()
    assert not _from_folder(stick, "/dev/sda1", tmp_path, writer, install)
    status = read_status(tmp_path)
    assert status is not None and status.state == "failed"
    assert "update certificate" in status.message or "refused" in status.message
    assert installs == []
