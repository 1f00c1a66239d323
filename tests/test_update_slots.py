"""RAUC's boot-slot backend over the Pi firmware's autoboot.txt (tryboot), and the boot-time
confirmation that keeps a slot on trial or goes back. The backend runs as RAUC runs it (a
separate process, ``python -m provisioning.image.tryboot``) on a real folder; the VM side
(the firmware's choice, RAUC itself, the watchdog) is `make test-image`'s."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from provisioning.errors import ImageError, UpdateError
from provisioning.health import Health
from provisioning.image.ab_layout import slot_cmdline
from provisioning.image.rauc_files import hook_script
from provisioning.image.tryboot import AUTOBOOT, BootSlots, backend, read_slots, write_slots
from provisioning.update.confirm import confirm_boot


def _card(tmp_path: Path) -> Path:
    boot = tmp_path / "firmware"
    boot.mkdir()
    write_slots(boot, BootSlots(committed="A"))
    return boot


def _rauc(boot: Path, *argv: str) -> str:
    """What RAUC's custom backend call prints (the module as a process, its BOOT_DIR pointed
    at the test's folder through a one-line wrapper)."""
    code = (
        "import sys; from pathlib import Path; import provisioning.image.tryboot as t; "
        f"t.BOOT_DIR = Path({str(boot)!r}); sys.exit(t.main())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_install_puts_the_other_slot_on_trial_and_mark_good_commits_it(tmp_path: Path) -> None:
    boot = _card(tmp_path)
    assert _rauc(boot, "get-primary") == "A"
    # what RAUC does for an install into B: B unbootable while written, then primary
    _rauc(boot, "set-state", "B", "bad")
    assert _rauc(boot, "get-state", "B") == "bad"
    _rauc(boot, "set-primary", "B")
    text = (boot / AUTOBOOT).read_text()
    assert text.splitlines()[1:] == [
        "[all]", "tryboot_a_b=1", "boot_partition=2", "[tryboot]", "boot_partition=3",
    ]  # fmt: skip
    assert _rauc(boot, "get-primary") == "B" and _rauc(boot, "get-state", "B") == "good"
    # booted on trial, healthy: `rauc status mark-good` commits B, the trial ends
    _rauc(boot, "set-state", "B", "good")
    assert "boot_partition=3" in (boot / AUTOBOOT).read_text()
    assert "[tryboot]" not in (boot / AUTOBOOT).read_text()
    assert _rauc(boot, "get-primary") == "B"
    assert sorted(os.listdir(boot)) == ["autoboot.txt", "mirror-slots.json"]  # no temp file


def test_a_trial_that_did_not_hold_is_recorded_bad_when_the_old_slot_confirms(
    tmp_path: Path,
) -> None:
    """The watchdog (or a power cut) reset the trial boot: the firmware booted A again, whose
    confirmation then marks A good; B, still on trial, is bad."""
    boot = _card(tmp_path)
    _rauc(boot, "set-primary", "B")
    _rauc(boot, "set-state", "A", "good")
    slots = read_slots(boot)
    assert slots.committed == "A" and slots.trial is None and slots.bad == {"B"}
    assert _rauc(boot, "get-state", "B") == "bad"


def test_marking_the_trial_bad_ends_it_and_the_committed_slot_stays(tmp_path: Path) -> None:
    boot = _card(tmp_path)
    _rauc(boot, "set-primary", "B")
    _rauc(boot, "set-state", "B", "bad")
    slots = read_slots(boot)
    assert (slots.committed, slots.trial, slots.bad) == ("A", None, {"B"})


def test_unknown_calls_and_a_broken_autoboot_file_are_one_line_errors(tmp_path: Path) -> None:
    boot = _card(tmp_path)
    with pytest.raises(ImageError, match="unknown call"):
        backend(["set-primary"], boot)
    with pytest.raises(ImageError, match="no slot 'C'"):
        backend(["set-primary", "C"], boot)
    (boot / AUTOBOOT).write_text("[all]\ntryboot_a_b=1\n")
    with pytest.raises(ImageError, match="no boot_partition"):
        read_slots(boot)
    (boot / AUTOBOOT).write_text("[all]\nboot_partition=7\n")
    with pytest.raises(ImageError, match="not a slot's boot partition"):
        read_slots(boot)


def test_each_slot_boots_its_own_root() -> None:
    line = "console=tty0 root=PARTUUID=6d697272-05 rw rauc.slot=A rootwait"
    assert slot_cmdline(line, "B").split() == [
        "console=tty0", "rw", "rootwait", "root=PARTUUID=6d697272-06", "rauc.slot=B",
    ]  # fmt: skip


class _Service:
    """systemd's view of mirror.service: active (READY sent) from a given poll on."""

    def __init__(self, active_from: int | None) -> None:
        self.active_from = active_from
        self.polls = 0

    def restart(self) -> None:
        raise AssertionError("confirmation never restarts the mirror")

    def is_active(self) -> bool:
        self.polls += 1
        return self.active_from is not None and self.polls >= self.active_from


def _cmdline(tmp_path: Path, slot: str) -> Path:
    path = tmp_path / "cmdline"
    path.write_text(f"console=tty0 root=PARTUUID=6d697272-06 rw rauc.slot={slot}\n")
    return path


def test_a_healthy_trial_is_kept_and_an_unhealthy_one_goes_back(tmp_path: Path) -> None:
    boot = _card(tmp_path)
    write_slots(boot, BootSlots(committed="A", trial="B"))
    marks: list[bool] = []
    reboots: list[str] = []

    def mark(good: bool) -> None:  # what `rauc status mark-good|bad booted` asks the backend
        marks.append(good)
        backend(["set-state", "B", "good" if good else "bad"], boot)

    healthy = confirm_boot(
        _Service(active_from=2), lambda: Health(True, "ok"), 5, lambda _m: None,
        boot_dir=boot, cmdline=_cmdline(tmp_path, "B"), mark=mark,
        reboot=lambda: reboots.append("reboot"),
    )  # fmt: skip
    assert healthy.kept and healthy.on_trial and marks == [True] and reboots == []
    assert read_slots(boot).committed == "B"

    write_slots(boot, BootSlots(committed="A", trial="B"))
    said: list[str] = []
    broken = confirm_boot(
        _Service(active_from=None), lambda: Health(True, "ok"), 0.5, said.append,
        boot_dir=boot, cmdline=_cmdline(tmp_path, "B"), mark=mark,
        reboot=lambda: reboots.append("reboot"),
    )  # fmt: skip
    assert not broken.kept and reboots == ["reboot"] and marks[-1] is False
    assert "back to A" in broken.said and "not active" in broken.said
    slots = read_slots(boot)
    assert (slots.committed, slots.trial, slots.bad) == ("A", None, {"B"})


def test_an_unhealthy_committed_slot_stays_and_a_plain_install_has_nothing_to_confirm(
    tmp_path: Path,
) -> None:
    boot = _card(tmp_path)
    kept = confirm_boot(
        _Service(active_from=1), lambda: Health(False, "camera missing"), 0.2, lambda _m: None,
        boot_dir=boot, cmdline=_cmdline(tmp_path, "A"), mark=lambda _g: None,
        reboot=lambda: pytest.fail("no reboot: there is nothing better to go back to"),
    )  # fmt: skip
    assert kept.kept and not kept.on_trial and "camera missing" in kept.said
    plain = tmp_path / "plain"
    plain.write_text("console=tty0 root=/dev/sda2 rw\n")
    none = confirm_boot(
        _Service(active_from=1), lambda: Health(True, "ok"), 1, lambda _m: None,
        boot_dir=boot, cmdline=plain,
        mark=lambda _g: pytest.fail("nothing to mark without A/B slots"),
    )  # fmt: skip
    assert none.slot is None and none.kept


def _hook(tmp_path: Path, slot_class: str, name: str, mount: Path) -> None:
    hook = tmp_path / "hook.sh"
    hook.write_text(hook_script())
    env = {
        **os.environ,
        "RAUC_SLOT_CLASS": slot_class,
        "RAUC_SLOT_NAME": name,
        "RAUC_SLOT_MOUNT_POINT": str(mount),
    }
    done = subprocess.run(
        ["sh", str(hook), "slot-post-install"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr  # RAUC fails the whole install otherwise


def test_the_bundle_hook_fits_each_written_slot_to_its_place(tmp_path: Path) -> None:
    """RAUC runs it after writing a slot (POSIX sh): the boot slot's cmdline.txt names its own
    root; the new root gets this device's machine-id (and SSH host keys, where there are)."""
    boot = tmp_path / "boot"
    boot.mkdir()
    (boot / "cmdline.txt").write_text(
        "console=tty0 root=PARTUUID=6d697272-05 rw rauc.slot=A rootwait\n"
    )
    _hook(tmp_path, "boot", "boot.1", boot)
    assert (boot / "cmdline.txt").read_text().split() == [
        "console=tty0", "root=PARTUUID=6d697272-06", "rw", "rauc.slot=B", "rootwait",
    ]  # fmt: skip
    root = tmp_path / "root"
    (root / "etc/ssh").mkdir(parents=True)
    (root / "etc/machine-id").write_text("uninitialized\n")
    _hook(tmp_path, "rootfs", "rootfs.1", root)
    assert (root / "etc/machine-id").read_text() == Path("/etc/machine-id").read_text()


def test_a_healthy_trial_that_rauc_cannot_mark_good_goes_back(tmp_path: Path) -> None:
    """Marking good timed out (RAUC or its backend hung): the trial is not committed by
    anyone, so it is ended now rather than left for the next power cut."""
    boot = _card(tmp_path)
    write_slots(boot, BootSlots(committed="A", trial="B"))
    reboots: list[str] = []

    def mark(good: bool) -> None:
        if good:
            raise UpdateError("rauc status mark-good did not end in 600 s")
        backend(["set-state", "B", "bad"], boot)

    verdict = confirm_boot(
        _Service(active_from=1), lambda: Health(True, "ok"), 1, lambda _m: None,
        boot_dir=boot, cmdline=_cmdline(tmp_path, "B"), mark=mark,
        reboot=lambda: reboots.append("reboot"),
    )  # fmt: skip
    assert not verdict.kept and reboots == ["reboot"] and "not marked good" in verdict.said
    assert read_slots(boot).committed == "A"
