"""`mirror image build` refusals, the image's own files and secret check, genimage on a small
tree (the real tool), the manifest's package list, and provisioning with secrets left to the
device's first start."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from appliance.cli.main import main
from appliance.modelstore import ModelStore
from provisioning.bundle_build import build_bundle
from provisioning.errors import UpdateError
from provisioning.image.ab_layout import arrange
from provisioning.image.genimage_cfg import Signing, run_genimage
from provisioning.image.growdata import grow_partition
from provisioning.image.manifest import debian_packages
from provisioning.image.rauc_files import add_rauc_files
from provisioning.image.root_files import add_image_files, secrets_in
from provisioning.image.signing_keys import make_signing_pair
from provisioning.image.spec import MIB, ImageSpec, spec_for
from provisioning.update.rauc_cli import check_bundle

PROFILE = "rpi4-cpu"


def _mirror(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "appliance.cli.main", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def _one_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = [ln for ln in done.stderr.splitlines() if not ln.startswith("[")]  # progress lines
    assert len(lines) == 1 and lines[0].startswith("mirror: error: "), done.stderr
    for word in words:
        assert word in lines[0]


def test_a_profile_without_an_image_names_the_vendor_os_path(tmp_path: Path) -> None:
    out = tmp_path / "x.img"
    done = _mirror(
        "image", "build", "--profile", "jetson-orin-nano", "--bundle", "b", "--out", str(out)
    )
    _one_error(done, "JetPack", "same bundle")
    assert not out.exists()


def test_a_bundle_for_another_target_is_refused_and_the_old_image_kept(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    index = {"format": 1, "files": {}, "target": {"name": "debian12-amd64"}}
    (bundle / "bundle.json").write_text(json.dumps(index))
    out = tmp_path / "kiosk.img"
    out.write_bytes(b"old image")
    done = _mirror(
        "image", "build", "--profile", PROFILE, "--bundle", str(bundle), "--out", str(out)
    )
    binfmt = Path("/proc/sys/fs/binfmt_misc/qemu-aarch64")
    tools = all(shutil.which(t) for t in ("genimage", "mmdebstrap"))
    if os.geteuid() != 0 or not tools or not binfmt.is_file():
        _one_error(done)  # not root, no tools or no emulator: refused before anything is read
    else:
        _one_error(done, "debian12-amd64", "--target debian12-arm64")
    assert out.read_bytes() == b"old image"


def test_provisioning_an_image_writes_no_secret(tmp_path: Path, store: ModelStore) -> None:
    bundle = tmp_path / "bundle"
    build_bundle(bundle, store.manifest, source=store.cache_dir, profile=PROFILE)
    root = tmp_path / "root"
    venv = tmp_path / "venv"
    args = ["provision", "--bundle", str(bundle), "--root", str(root), "--venv", str(venv)]
    assert main([*args, "--profile", PROFILE, "--secrets-at-first-start"]) == 0
    web = root / "var/lib/mirror/web"
    assert (web / "web.yaml").is_file()
    assert not (web / "auth.json").exists()
    assert not (web / "secret_key").exists()
    assert not (web / "first-boot.txt").exists()


def _fake_root(root: Path) -> None:
    for folder in (
        "etc/ssh",
        "var/lib/systemd",
        "var/lib/dbus",
        "var/lib/mirror/web",
        "boot/firmware",
    ):
        (root / folder).mkdir(parents=True)
    (root / "etc/machine-id").write_text("0123456789abcdef0123456789abcdef\n")
    (root / "etc/ssh/ssh_host_ed25519_key").write_text("PRIVATE\n")
    (root / "var/lib/systemd/random-seed").write_bytes(os.urandom(32))
    (root / "var/lib/dbus/machine-id").write_text("0123456789abcdef0123456789abcdef\n")
    ssh_wants = root / "etc/systemd/system/multi-user.target.wants/ssh.service"
    ssh_wants.parent.mkdir(parents=True)
    ssh_wants.symlink_to("/lib/systemd/system/ssh.service")
    (root / "boot/firmware/config.txt").write_text("arm_64bit=1\n")


def test_image_files_leave_nothing_unique_and_the_check_finds_a_secret(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _fake_root(root)
    before = secrets_in(root)
    assert any("ssh_host" in f for f in before) and any("machine-id" in f for f in before)
    add_image_files(root)
    assert secrets_in(root) == []
    assert (root / "etc/machine-id").read_text() == "uninitialized\n"
    assert not (root / "etc/systemd/system/multi-user.target.wants/ssh.service").exists()
    assert (root / "etc/ssh/sshd_not_to_be_run").is_file()
    assert os.readlink(root / "etc/systemd/system/systemd-firstboot.service") == "/dev/null"
    assert (root / "boot/firmware/mirror.yaml").is_file()
    unit = (root / "etc/systemd/system/mirror-firstboot.service").read_text()
    assert "mirror image firstboot" in unit and "Before=network-pre.target" in unit
    (root / "var/lib/mirror/web/secret_key").write_bytes(os.urandom(32))
    assert secrets_in(root) == ["/var/lib/mirror/web/secret_key"]


def test_the_image_feeds_the_hardware_watchdog_and_caps_its_journal(tmp_path: Path) -> None:
    """systemd pings the SoC's watchdog (a hung kernel reboots the kiosk); the journal on the
    card is capped and written in bulk; the screen mode provisioning wrote stays."""
    root = tmp_path / "root"
    _fake_root(root)
    extra = root / "etc/default/raspi-extra-cmdline"
    extra.parent.mkdir(parents=True, exist_ok=True)
    extra.write_text("vt.global_cursor_default=0 video=HDMI-A-1:1280x720@60\n")
    add_image_files(root)
    manager = (root / "etc/systemd/system.conf.d/mirror-watchdog.conf").read_text()
    assert "[Manager]" in manager and "RuntimeWatchdogSec=15s" in manager.splitlines()
    journal = (root / "etc/systemd/journald.conf.d/mirror.conf").read_text().splitlines()
    assert "Storage=persistent" in journal and "SystemMaxUse=64M" in journal
    assert extra.read_text() == "vt.global_cursor_default=0 video=HDMI-A-1:1280x720@60\n"


def test_the_image_has_the_wifi_regulatory_database() -> None:
    """cfg80211 reads regulatory.db (wireless-regdb, a Recommends mmdebstrap skips): without
    it the venue's `country:` is ignored."""
    spec = spec_for(PROFILE)
    assert "wireless-regdb" in spec.packages and "firmware-brcm80211" in spec.packages


def _part(image: Path, part: dict[str, int], out: Path) -> Path:
    with image.open("rb") as img, out.open("wb") as dest:
        img.seek(part["start"] * 512)
        dest.write(img.read(part["size"] * 512))
    return out


def _debugfs(ext4: Path, request: str) -> str:
    done = subprocess.run(
        ["debugfs", "-R", request, str(ext4)], capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.mark.skipif(
    os.geteuid() != 0
    or not all(shutil.which(t) for t in ("genimage", "mcopy", "mkdosfs", "sfdisk", "rauc")),
    reason="needs root and: apt-get install genimage mtools dosfstools fdisk rauc squashfs-tools",
)
def test_genimage_makes_the_ab_card_and_its_signed_bundle(tmp_path: Path) -> None:
    """The MBR of the A/B card: the shared FAT (autoboot.txt with slot A, the venue file), slot
    A's FAT boot and ext4 root, slot B empty, the data partition with /var/lib/mirror (its
    models linked into the root); and the RAUC bundle of the same boot and root images,
    signed with the installer's key, its certificate the image's keyring."""
    root = tmp_path / "root"
    _fake_root(root)
    (root / "boot/firmware/cmdline.txt").write_text("console=tty0 root=PARTUUID=6d697272-05 rw\n")
    (root / "var/lib/mirror/models").mkdir()
    (root / "var/lib/mirror/models/face.onnx").write_bytes(b"model")
    (root / "var/lib/mirror/config.yaml").write_text("pipeline: {}\n")
    key, cert = make_signing_pair(tmp_path / "keys")
    add_image_files(root)
    add_rauc_files(root, cert)
    (root / "etc/hostname").write_text("mirror\n")
    arrange(root, tmp_path / "shared")
    spec = ImageSpec(
        PROFILE, "bookworm", "arm64", "debian12-arm64", boot_bytes=32 * MIB, root_bytes=64 * MIB,
        shared_bytes=8 * MIB, data_bytes=16 * MIB,
    )  # fmt: skip
    out = tmp_path / "small.img"
    work = tmp_path / "work"
    work.mkdir()
    signing = Signing(key, cert, "9.9.9", "20261205T000000Z")
    bundle = run_genimage(
        spec, root, out, shared=tmp_path / "shared", work=work, log=tmp_path / "log",
        signing=signing,
    )  # fmt: skip
    table = json.loads(
        subprocess.run(
            ["sfdisk", "-J", str(out)], capture_output=True, text=True, check=True
        ).stdout
    )["partitiontable"]
    parts = table["partitions"]
    assert table["label"] == "dos" and table["id"] == "0x6d697272"
    assert [p["type"] for p in parts] == ["c", "c", "c", "f", "83", "83", "83"]
    assert parts[0].get("bootable") is True and parts[0]["start"] * 512 == 4 * MIB
    assert [p["size"] * 512 for p in parts if p["type"] != "f"] == [
        8 * MIB, 32 * MIB, 32 * MIB, 64 * MIB, 64 * MIB, 16 * MIB,
    ]  # fmt: skip
    shared = subprocess.run(
        ["mtype", "-i", f"{out}@@{parts[0]['start'] * 512}", "::autoboot.txt"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "tryboot_a_b=1" in shared and "boot_partition=2" in shared and "[tryboot]" not in shared
    shared_files = subprocess.run(
        ["mdir", "-b", "-i", f"{out}@@{parts[0]['start'] * 512}"],
        capture_output=True, text=True, check=True,
    ).stdout.upper()  # fmt: skip
    assert "MIRROR.YAML" in shared_files and "CONFIG.TXT" not in shared_files
    cmdline = subprocess.run(
        ["mtype", "-i", f"{out}@@{parts[1]['start'] * 512}", "::cmdline.txt"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "root=PARTUUID=6d697272-05" in cmdline and "rauc.slot=A" in cmdline
    root_a = _part(out, parts[4], tmp_path / "root.ext4")
    assert _debugfs(root_a, "cat /etc/machine-id") == "uninitialized\n"
    assert _debugfs(root_a, "cat /opt/mirror/models/face.onnx") == "model"
    assert "config.yaml" not in _debugfs(root_a, "ls /var/lib/mirror")
    assert "face-mirror-rpi4" in _debugfs(root_a, "cat /etc/rauc/system.conf")
    assert _debugfs(root_a, "cat /etc/rauc/keyring.pem") == cert.read_text()
    data = _part(out, parts[6], tmp_path / "data.ext4")
    assert _debugfs(data, "cat /mirror/config.yaml") == "pipeline: {}\n"
    assert "/opt/mirror/models" in _debugfs(data, "stat /mirror/models")
    label = subprocess.run(["e2label", str(data)], capture_output=True, text=True, check=True)
    assert label.stdout.strip() == "MIRRORDATA"
    assert bundle is not None and bundle.name == "small.raucb"
    assert check_bundle(bundle, cert).version == "9.9.9"
    _, other_cert = make_signing_pair(tmp_path / "other")
    with pytest.raises(UpdateError, match=r"small\.raucb refused: signature verification failed"):
        check_bundle(bundle, other_cert)
    broken = tmp_path / "broken.raucb"
    data_bytes = bytearray(bundle.read_bytes())
    data_bytes[-200] ^= 0xFF  # inside the signature
    broken.write_bytes(bytes(data_bytes))
    with pytest.raises(UpdateError, match=r"broken\.raucb refused"):
        check_bundle(broken, cert)
    only = run_genimage(
        spec, root, tmp_path / "only.raucb", shared=tmp_path / "shared", work=work,
        log=tmp_path / "log", signing=signing, card=False,
    )  # fmt: skip
    assert only == tmp_path / "only.raucb" and check_bundle(only, cert).version == "9.9.9"
    assert not (tmp_path / "only.img").exists()
    if shutil.which("growpart"):  # cloud-guest-utils: the first boot grows only the data
        with out.open("r+b") as card:
            card.truncate(out.stat().st_size + 64 * MIB)
        assert grow_partition(str(out), 7) == ""
        grown = json.loads(
            subprocess.run(
                ["sfdisk", "-J", str(out)], capture_output=True, text=True, check=True
            ).stdout
        )["partitiontable"]["partitions"]
        assert [p["size"] for p in grown[:6]] == [p["size"] for p in parts[:3]] + [
            grown[3]["size"], parts[4]["size"], parts[5]["size"],
        ]  # fmt: skip
        assert grown[6]["size"] * 512 > 16 * MIB + 60 * MIB
        assert grown[6]["start"] + grown[6]["size"] == grown[3]["start"] + grown[3]["size"]
        assert grow_partition(str(out), 7) == "nochange"


def test_manifest_lists_installed_packages_with_versions(tmp_path: Path) -> None:
    status = tmp_path / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True)
    status.write_text(
        "Package: python3\nStatus: install ok installed\nArchitecture: arm64\n"
        "Version: 3.11.2-1+b1\n\n"
        "Package: gone\nStatus: deinstall ok config-files\nArchitecture: arm64\nVersion: 1\n"
        "Description: x\n multi-line: y\n"
    )
    assert debian_packages(tmp_path) == {"python3:arm64": "3.11.2-1+b1"}


def test_cached_package_lists_pin_the_versions_and_need_no_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from provisioning.image.cache import apt_dirs
    from provisioning.image.debian_root import mmdebstrap_command
    from provisioning.image.spec import spec_for

    monkeypatch.setenv("MIRROR_IMAGE_CACHE", str(tmp_path))
    spec = spec_for(PROFILE)
    first = mmdebstrap_command(spec, tmp_path / "root.tar")
    assert "--skip=update" not in first  # no lists yet: apt-get update fetches them
    assert any(a.startswith("--customize-hook=sync-out /var/lib/apt/lists") for a in first)
    _, lists = apt_dirs(spec)
    lists.mkdir(parents=True)
    (lists / "deb.debian.org_debian_dists_bookworm_InRelease").write_text("cached")
    again = mmdebstrap_command(spec, tmp_path / "root.tar")
    assert "--skip=update" in again
    assert f"--setup-hook=sync-in {lists} /var/lib/apt/lists" in again
    assert "--skip=update" not in mmdebstrap_command(spec, tmp_path / "r.tar", refresh=True)
    assert "--include=" + ",".join(spec.packages) in again
    assert any("MODULES=list" in a for a in again)


def test_the_root_build_emulates_a_cortex_a72_and_writes_no_manuals(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """qemu-user's default CPU is slow for Debian's glibc; dpkg skips docs, manuals, locales."""
    from provisioning.image.debian_root import build_env, mmdebstrap_command
    from provisioning.image.spec import spec_for

    monkeypatch.setenv("MIRROR_IMAGE_CACHE", str(tmp_path))
    monkeypatch.delenv("QEMU_CPU", raising=False)
    spec = spec_for(PROFILE)
    assert build_env(spec)["QEMU_CPU"] == "cortex-a72"
    monkeypatch.setenv("QEMU_CPU", "max")  # the caller's own choice is kept
    assert build_env(spec)["QEMU_CPU"] == "max"
    cmd = mmdebstrap_command(spec, tmp_path / "root.tar")
    for option in (
        "--dpkgopt=path-exclude=/usr/share/man/*",
        "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-include=/usr/share/doc/*/copyright",
        "--dpkgopt=path-exclude=/usr/share/locale/*",
        "--dpkgopt=force-unsafe-io",
    ):
        assert option in cmd
