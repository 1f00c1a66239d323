"""`mirror provision` completes an install: targets, extras, the venv step's checks, the
unit's enabling, the framebuffer console, Jetson CSI and the live-system steps."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

import pytest

from appliance.cli.main import main
from appliance.device.catalog import load_profiles
from appliance.device.profile import HardwareProfile
from appliance.modelstore import ModelStore
from appliance.modelstore.hashing import sha256_file
from provisioning import requirements
from provisioning.bundle_build import build_bundle
from provisioning.console import video_words, with_cursor_off
from provisioning.in_root import shell_for
from provisioning.layout import Layout
from provisioning.provision import Request, provision
from provisioning.runner import RunResult
from provisioning.targets import named, platform_tags
from provisioning.units import render_env_file, render_unit

PROFILE = "rpi4-cpu"
WANTS = "etc/systemd/system/multi-user.target.wants/mirror.service"
# the profile's screen mode on both HDMI ports (rpi4-cpu: 1280x720)
VIDEO = " video=HDMI-A-1:1280x720@60 video=HDMI-A-2:1280x720@60"
PI_CMDLINE = (
    "console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 rootwait"
)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory, store: ModelStore) -> Path:
    out = tmp_path_factory.mktemp("bundle")
    build_bundle(
        out, store.manifest, source=store.cache_dir, profile=PROFILE, target=named("debian12-arm64")
    )
    return out


def _args(root: Path, bundle: Path, profile: str = PROFILE) -> list[str]:
    venv = root / "stand-in-venv"  # not under /opt: the bundle has no wheels here
    return ["provision", "--bundle", str(bundle), "--root", str(root), "--venv", str(venv),
            "--profile", profile]  # fmt: skip


class Recorder:
    """A runner that records what would run on the live system, and succeeds (or not)."""

    def __init__(self, failing: str = "") -> None:
        self.calls: list[tuple[str, ...]] = []
        self.failing = failing

    def __call__(self, argv: Sequence[str], env: Mapping[str, str]) -> RunResult:
        self.calls.append(tuple(argv))
        if self.failing and argv[0] == self.failing:
            return RunResult(1, "System has not been booted with systemd as init system")
        return RunResult(0, "")


def every_tool(name: str) -> str:
    return f"/usr/bin/{name}"


# --- bundle: target, platform tags, extras ---------------------------------------------


def test_bundle_for_debian12_arm64_asks_pip_for_every_compatible_tag(
    tmp_path: Path, store: ModelStore, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bundle"
    args = ["provision", "bundle", str(out), "--from", str(store.cache_dir)]
    assert main([*args, "--target", "debian12-arm64", "--profile", PROFILE]) == 0
    index = json.loads((out / "bundle.json").read_text())
    download = next(c for c in index["wheels"]["commands"] if " pip download " in c).split()
    platforms = {download[i + 1] for i, word in enumerate(download) if word == "--platform"}
    expected = {f"manylinux_2_{minor}_aarch64" for minor in range(17, 37)}
    assert platforms == expected | {"manylinux2014_aarch64", "linux_aarch64"}
    assert download[download.index("--python-version") + 1] == "3.11"
    assert download[download.index("--implementation") + 1] == "cp"
    assert "--only-binary=:all:" in download
    # the pi extra's requirements, evaluated for Python 3.11 on aarch64
    assert "pygame-ce>=2.5" in download and "onnxruntime>=1.18" not in " ".join(download)
    target = index["target"]
    assert (target["name"], target["python"], target["glibc"], target["arch"]) == (
        "debian12-arm64",
        "3.11",
        "2.36",
        "aarch64",
    )
    assert target["extras"] == ["pi"]
    assert "manylinux_2_27_aarch64" in target["platforms"]  # ai-edge-litert's only tag


def test_platform_tags_of_the_other_targets() -> None:
    jetson = platform_tags(named("jetpack6"))
    assert jetson[0] == "manylinux_2_35_aarch64" and "manylinux_2_36_aarch64" not in jetson
    amd64 = platform_tags(named("debian13-amd64"))
    assert amd64[0] == "manylinux_2_41_x86_64"
    assert {"manylinux2014_x86_64", "manylinux1_x86_64", "linux_x86_64"} <= set(amd64)


def test_platform_and_python_name_a_target_too(
    tmp_path: Path, store: ModelStore, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bundle"
    args = ["provision", "bundle", str(out), "--from", str(store.cache_dir)]
    assert main([*args, "--platform", "manylinux_2_41_aarch64", "--python", "3.13"]) == 0
    index = json.loads((out / "bundle.json").read_text())
    assert index["target"]["python"] == "3.13" and index["target"]["glibc"] == "2.41"
    capsys.readouterr()
    assert main([*args, "--platform", "manylinux_2_41_aarch64"]) == 1
    assert capsys.readouterr().err.startswith("mirror: error: --platform manylinux_2_41_aarch64")
    assert main([*args, "--target", "windows11"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown target 'windows11'" in err and "jetpack6" in err


def test_extras_are_resolved_from_metadata_for_the_target() -> None:
    requires = [
        "numpy>=1.24,<3",
        "opencv-python-headless>=4.10; 'tegra' not in platform_release",
        'onnxruntime>=1.18; extra == "cpu"',
        'onnxruntime-gpu>=1.18; extra == "gpu"',
        "lgpio>=0.2.2; python_version < '3.13' and extra == 'pi'",
        'pygame-ce>=2.5; extra == "pi"',
        "numpy<2,>=1.24; python_version < '3.12' and extra == 'pi'",
        'pytest>=8; extra == "dev"',
    ]
    pi12 = requirements.for_target(requires, ["pi"], named("debian12-arm64"))
    assert pi12 == [
        "numpy<3,>=1.24",
        "opencv-python-headless>=4.10",
        "lgpio>=0.2.2",
        "pygame-ce>=2.5",
        "numpy<2,>=1.24",
    ]
    pi13 = requirements.for_target(requires, ["pi"], named("debian13-arm64"))
    assert "lgpio>=0.2.2" not in pi13 and "numpy<2,>=1.24" not in pi13
    jetson = requirements.for_target(requires, ["jetson"], named("jetpack6"))
    assert jetson == ["numpy<3,>=1.24"]  # no pip opencv on a -tegra kernel
    gpu = requirements.for_target(requires, ["gpu"], named("ubuntu2204-amd64"))
    assert "onnxruntime-gpu>=1.18" in gpu and "onnxruntime>=1.18" not in gpu


def test_installed_metadata_declares_every_extra_the_profiles_use() -> None:
    dist = requirements.installed()
    used = {extra for p in load_profiles().values() for extra in p.install.extras}
    assert requirements.check_extras(dist, sorted(used)) == []
    cpu = requirements.for_target(dist.requires or [], ["cpu"], named("debian12-amd64"))
    assert any(r.startswith("onnxruntime") and "gpu" not in r for r in cpu)


def test_every_profile_has_its_install_section() -> None:
    profiles = load_profiles()
    for name, profile in profiles.items():
        extras = set(profile.install.extras)
        assert extras, name
        assert not {"cpu", "gpu"} <= extras, name
        is_board = name.startswith(("rpi", "jetson"))
        assert profile.install.system_site_packages is is_board, name
    assert set(profiles["rpi5-cpu"].install.extras) == {"pi"}
    assert "gpu" in profiles["x86-nvidia"].install.extras
    assert "jetson" in profiles["jetson-orin-nano"].install.extras


# --- the venv step: refusals before anything is written ---------------------------------


def _with_wheels(bundle: Path, into: Path, target: dict[str, str], extras: list[str]) -> Path:
    """The bundle as `--with-wheels` records it (the refusals never read the wheels)."""
    shutil.copytree(bundle, into)
    wheel = into / "wheels" / "face_mirror-0.1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"a project wheel's bytes")
    index = json.loads((into / "bundle.json").read_text())
    index["files"]["wheels/" + wheel.name] = {"sha256": sha256_file(wheel), "size": 23}
    index["wheels"]["included"] = True
    index["target"] = {**target, "extras": extras}
    index["project"] = {"name": "face-mirror", "version": "0.1.0", "wheel": wheel.name}
    (into / "bundle.json").write_text(json.dumps(index))
    return into


def _root_with_this_python(root: Path) -> Path:
    """A root whose python3 is this machine's real interpreter and C library."""
    real = Path(sys.executable).resolve()
    bin_dir = root / "usr" / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copyfile(real, bin_dir / real.name)
    (bin_dir / "python3").symlink_to(real.name)
    libc = Path("/lib/x86_64-linux-gnu/libc.so.6")
    if libc.is_file():
        (root / "lib" / "x86_64-linux-gnu").mkdir(parents=True)
        shutil.copyfile(libc, root / "lib" / "x86_64-linux-gnu" / "libc.so.6")
    return root


ARM64 = {"name": "debian12-arm64", "python": "3.11", "glibc": "2.36", "arch": "aarch64"}


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the root copies an x86_64 python")
def test_a_bundle_for_another_cpu_is_refused_and_nothing_written(
    tmp_path: Path, bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arm = _with_wheels(bundle, tmp_path / "arm-bundle", ARM64, ["pi"])
    root = _root_with_this_python(tmp_path / "root")
    before = sorted(root.rglob("*"))
    args = ["provision", "--bundle", str(arm), "--root", str(root), "--profile", PROFILE]
    assert main(args) == 1
    err = capsys.readouterr().err.splitlines()[-1]  # after the bundle's verifying bar
    assert err.startswith("mirror: error: the bundle's wheels are for debian12-arm64")
    assert "debian12-arm64" in err and "x86_64" in err and "--target" in err
    assert sorted(root.rglob("*")) == before

    other_python = {**ARM64, "arch": "x86_64", "python": "3.13", "name": "debian13-amd64"}
    newer = _with_wheels(bundle, tmp_path / "py313-bundle", other_python, ["pi"])
    assert main(["provision", "--bundle", str(newer), *args[3:]]) == 1
    err = capsys.readouterr().err
    assert (
        "CPython 3.13" in err
        and f"CPython {sys.version_info.major}.{sys.version_info.minor}" in err
    )
    assert sorted(root.rglob("*")) == before


def test_a_bundle_without_the_profiles_extras_is_refused(
    tmp_path: Path, bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cpu_only = _with_wheels(bundle, tmp_path / "cpu-bundle", ARM64, ["cpu"])
    root = tmp_path / "root"
    root.mkdir()
    args = ["provision", "--bundle", str(cpu_only), "--root", str(root), "--profile", PROFILE]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "needs the extras pi" in err and "--profile rpi4-cpu" in err
    assert list(root.iterdir()) == []


def test_without_wheels_the_venv_step_is_deferred_with_the_reason(
    tmp_path: Path, bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    args = ["provision", "--bundle", str(bundle), "--root", str(root), "--dry-run"]
    assert main([*args, "--profile", PROFILE]) == 0
    out = capsys.readouterr().out
    assert "deferred  venv       /opt/mirror/venv face-mirror: the bundle has no wheels" in out
    assert f"create    link       /{WANTS} -> /etc/systemd/system/mirror.service" in out
    assert list(root.iterdir()) == []


# --- unit, enabling, console ------------------------------------------------------------


def test_unit_is_enabled_with_a_writable_working_directory(tmp_path: Path, bundle: Path) -> None:
    root = tmp_path / "root"
    assert main(_args(root, bundle)) == 0
    link = root / WANTS
    assert link.is_symlink() and os.readlink(link) == "/etc/systemd/system/mirror.service"
    unit = (root / "etc/systemd/system/mirror.service").read_text().splitlines()
    assert "WorkingDirectory=/var/lib/mirror" in unit
    env = (root / "etc/default/mirror").read_text().splitlines()
    assert "LG_WD=/var/lib/mirror" in env
    assert not any(line.startswith("MIRROR_PROFILE=") for line in env)


def test_framebuffer_kiosk_masks_getty_and_hides_the_cursor_once(
    tmp_path: Path, bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    cmdline = root / "boot" / "firmware" / "cmdline.txt"
    cmdline.parent.mkdir(parents=True)
    cmdline.write_text(PI_CMDLINE + "\n")
    assert main(_args(root, bundle)) == 0
    for unit in ("getty@tty1.service", "autovt@tty1.service"):
        masked = root / "etc/systemd/system" / unit
        assert masked.is_symlink() and os.readlink(masked) == "/dev/null", unit
    tmpfiles = (root / "etc/tmpfiles.d/mirror-console.conf").read_text()
    assert "w /sys/class/vtconsole/vtcon1/bind - - - - 0" in tmpfiles
    text = cmdline.read_text()
    assert text == PI_CMDLINE + " vt.global_cursor_default=0" + VIDEO + "\n"
    capsys.readouterr()

    assert main(_args(root, bundle)) == 0
    assert "no change" in capsys.readouterr().out
    assert cmdline.read_text() == text

    assert with_cursor_off("a vt.global_cursor_default=1 b vt.global_cursor_default=1\n") == (
        "a vt.global_cursor_default=0 b\n"
    )


def test_a_pi_with_raspi_firmware_keeps_the_cursor_off_after_kernel_updates(
    tmp_path: Path, bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """raspi-firmware writes cmdline.txt anew at each kernel update from its kept files: the
    cursor word goes into /etc/default/raspi-extra-cmdline too, once, other words kept."""
    root = tmp_path / "root"
    cmdline = root / "boot" / "firmware" / "cmdline.txt"
    cmdline.parent.mkdir(parents=True)
    cmdline.write_text(PI_CMDLINE + "\n")
    default = root / "etc" / "default"
    default.mkdir(parents=True)
    (default / "raspi-firmware").write_text("ROOTPART=LABEL=RASPIROOT\n")
    extra = default / "raspi-extra-cmdline"
    extra.write_text("quiet vt.global_cursor_default=1\n")
    extra.chmod(0o640)
    assert main(_args(root, bundle)) == 0
    assert extra.read_text() == "quiet vt.global_cursor_default=0" + VIDEO + "\n"
    assert extra.stat().st_mode & 0o777 == 0o640
    capsys.readouterr()
    assert main(_args(root, bundle)) == 0
    assert "no change" in capsys.readouterr().out
    assert extra.read_text() == "quiet vt.global_cursor_default=0" + VIDEO + "\n"

    extra.unlink()  # none yet: made with the profile's words
    assert main(_args(root, bundle)) == 0
    assert extra.read_text() == "vt.global_cursor_default=0" + VIDEO + "\n"

    plain = tmp_path / "plain"  # a Pi root without raspi-firmware: cmdline.txt only
    (plain / "boot" / "firmware").mkdir(parents=True)
    (plain / "boot" / "firmware" / "cmdline.txt").write_text(PI_CMDLINE + "\n")
    assert main(_args(plain, bundle)) == 0
    assert not (plain / "etc" / "default" / "raspi-extra-cmdline").exists()


def test_a_pi_screen_is_held_to_the_profiles_mode_not_the_tvs(tmp_path: Path, bundle: Path) -> None:
    """A 4K TV would give an 8-megapixel framebuffer a Pi cannot fill at frame rate: the
    profile's mode goes on the command line for both HDMI ports, in place of any other
    mode there (a KMS screen too), once; a headless profile gets none."""
    root = tmp_path / "root"
    cmdline = root / "boot" / "firmware" / "cmdline.txt"
    cmdline.parent.mkdir(parents=True)
    cmdline.write_text(PI_CMDLINE + " video=HDMI-A-1:3840x2160@30 video=HDMI-A-1:1920x1080\n")
    assert main(_args(root, bundle)) == 0
    words = cmdline.read_text().split()
    assert [w for w in words if w.startswith("video=")] == VIDEO.split()
    profiles = load_profiles()
    kms = profiles["rpi5-cpu"]
    kms = kms.model_copy(update={"display": kms.display.model_copy(update={"kind": "sdl"})})
    kms_root = tmp_path / "kms"
    (kms_root / "boot" / "firmware").mkdir(parents=True)
    (kms_root / "boot" / "firmware" / "cmdline.txt").write_text(PI_CMDLINE + "\n")
    lines = _console_lines(kms_root, bundle, kms)
    assert len(lines) == 1 and "cmdline.txt" in lines[0], lines
    headless = profiles["rpi4-cpu"]
    headless = headless.model_copy(
        update={"display": headless.display.model_copy(update={"connector": "headless"})}
    )
    assert video_words(headless) == ()
    assert video_words(profiles["jetson-orin-nano"]) == ()


def test_kms_and_headless_profiles_leave_the_console_alone(tmp_path: Path, bundle: Path) -> None:
    profiles = load_profiles()
    for name in ("x86-nvidia-t4", "jetson-orin-nano"):
        profile = profiles[name]
        if name == "jetson-orin-nano":  # the Jetson's screen is KMS (SDL), not a framebuffer
            profile = profile.model_copy(
                update={"display": profile.display.model_copy(update={"kind": "sdl"})}
            )
        root = tmp_path / name
        cmdline = root / "boot" / "firmware" / "cmdline.txt"
        cmdline.parent.mkdir(parents=True)
        cmdline.write_text(PI_CMDLINE + "\n")
        assert _console_lines(root, bundle, profile) == []
        assert cmdline.read_text() == PI_CMDLINE + "\n"


def _console_lines(root: Path, bundle: Path, profile: HardwareProfile) -> list[str]:
    from provisioning.console import console_actions

    return [a.line() for a in console_actions(Layout(root=root), profile)]


def test_jetson_csi_keeps_the_real_tmp_for_nvargus() -> None:
    jetson = load_profiles()["jetson-orin-nano"]
    layout = Layout(root=Path("/"))
    usb = render_unit(jetson, layout).splitlines()
    assert "PrivateTmp=yes" in usb
    csi = jetson.model_copy(
        update={"capture": jetson.capture.model_copy(update={"kind": "gstreamer-csi"})}
    )
    unit = render_unit(csi, layout).splitlines()
    assert not any(line.startswith("PrivateTmp") for line in unit)
    assert "ReadWritePaths=/var/lib/mirror /tmp" in unit
    assert "Wants=nvargus-daemon.service" in unit
    assert any(line.startswith("After=") and "nvargus-daemon.service" in line for line in unit)
    assert "LG_WD=/var/lib/mirror" in render_env_file(csi, layout)


# --- live-system steps -------------------------------------------------------------------


def _request(root: Path, bundle: Path, *, live: bool | None) -> Request:
    venv = PurePosixPath("/opt/stand-in")
    return Request(root=root, bundle=bundle, profile=PROFILE, venv=venv, live=live)


def test_live_system_steps_run_only_on_the_live_system(tmp_path: Path, bundle: Path) -> None:
    mounted = Recorder()
    outcome = provision(
        _request(tmp_path / "image", bundle, live=None), progress=False, runner=mounted,
        which=every_tool,
    )  # fmt: skip
    assert mounted.calls == []
    assert outcome.report is not None
    assert any("systemd does this at boot" in line for line in outcome.report.deferred)

    live = Recorder()
    root = tmp_path / "live"
    provision(_request(root, bundle, live=True), progress=False, runner=live, which=every_tool)
    commands = [" ".join(call[:2]) for call in live.calls]
    assert commands == [
        "systemd-sysusers /usr/lib/sysusers.d/mirror.conf",
        "udevadm control",
        "udevadm trigger",
        "systemd-tmpfiles --create",
        "systemctl daemon-reload",
    ]

    # a second run: the files are as wanted; only the user (which the recorder did not
    # create) is still missing from the root's /etc/passwd
    again = Recorder()
    provision(_request(root, bundle, live=True), progress=False, runner=again, which=every_tool)
    assert [call[0] for call in again.calls] == ["systemd-sysusers"]
    (root / "etc" / "passwd").write_text("mirror:x:998:998::/var/lib/mirror:/usr/sbin/nologin\n")
    third = Recorder()
    provision(_request(root, bundle, live=True), progress=False, runner=third, which=every_tool)
    assert third.calls == []


def test_absent_or_failing_tools_are_reported_not_fatal(tmp_path: Path, bundle: Path) -> None:
    def no_udevadm(name: str) -> str | None:
        return None if name == "udevadm" else every_tool(name)

    failing = Recorder(failing="systemctl")
    outcome = provision(
        _request(tmp_path / "live", bundle, live=True), progress=False, runner=failing,
        which=no_udevadm,
    )  # fmt: skip
    assert "udevadm" not in {call[0] for call in failing.calls}
    assert outcome.report is not None
    notes = "\n".join(outcome.report.deferred)
    assert "udevadm not found here: skipped" in notes
    assert "systemctl daemon-reload failed (System has not been booted" in notes


def _fake_root_python(root: Path, machine: int) -> None:
    """``root/usr/bin/python3``: just an ELF header naming ``machine`` (enough to tell the CPU)."""
    python = root / "usr/bin/python3"
    python.parent.mkdir(parents=True, exist_ok=True)
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    header[18:20] = machine.to_bytes(2, "little")
    python.write_bytes(bytes(header))


def test_a_foreign_root_runs_on_an_emulated_cpu_that_is_fast(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """qemu-user's default CPU makes Debian 13's python ~13x slower (SVE string functions)."""
    monkeypatch.delenv("QEMU_CPU", raising=False)
    monkeypatch.setattr("provisioning.in_root.platform.machine", lambda: "x86_64")
    _fake_root_python(tmp_path, 183)  # EM_AARCH64
    env = shell_for(Layout(root=tmp_path)).env()
    assert env["QEMU_CPU"] == "cortex-a72"
    assert not any(k.startswith(("PYTHON", "PIP", "VIRTUAL_ENV")) for k in env)
    monkeypatch.setenv("QEMU_CPU", "max")  # an installer's own choice is kept
    assert shell_for(Layout(root=tmp_path)).env()["QEMU_CPU"] == "max"


def test_a_root_of_this_machines_cpu_gets_no_emulator_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("QEMU_CPU", raising=False)
    monkeypatch.setattr("provisioning.in_root.platform.machine", lambda: "aarch64")
    _fake_root_python(tmp_path, 183)
    assert "QEMU_CPU" not in shell_for(Layout(root=tmp_path)).env()
