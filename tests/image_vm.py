"""A copy of a built image booted in qemu-system-aarch64 (-M virt, TCG), seen from outside.

The test plays the Pi's firmware: it reads ``autoboot.txt`` on the shared FAT partition
(``boot_partition`` of ``[all]``, or of ``[tryboot]`` when the last reboot asked for
``0 tryboot``), then that slot's ``config.txt`` (kernel, initramfs) and ``cmdline.txt``
(its root and ``rauc.slot=``), with mtools. QEMU runs with ``-no-reboot``: a reboot
ends it, and :meth:`Vm.follow_reboot` boots the next slot as the firmware would.
The serial console goes to a file (the journal is forwarded to it); the admin
page is reached through a forwarded loopback port; QEMU's monitor (a unix socket)
powers the VM down and takes ``screendump`` pictures. After power-off the root's
files and journal are read from the disk image with e2fsprogs' ``debugfs`` and
the host's ``journalctl`` (no mounting, no loop devices).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import re
import shutil
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

MIB = 1024**2
# indexes in sfdisk's list of the card's partitions (the extended partition is the fourth)
SHARED = 0
BOOT = {"A": 1, "B": 2}
ROOT = {"A": 4, "B": 5}
DATA = 6
RESTART = re.compile(r"reboot: Restarting system(?: with command '([^']*)')?")
POWER_OFF = re.compile(r"reboot: Power down")


def partitions(image: Path) -> list[dict[str, int]]:
    done = subprocess.run(["sfdisk", "-J", str(image)], capture_output=True, text=True, check=True)
    parts: list[dict[str, int]] = json.loads(done.stdout)["partitiontable"]["partitions"]
    return parts


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Vm:
    def __init__(self, image: Path, work: Path, name: str) -> None:
        self.image = image
        self.work = work
        self.name = name
        self.port = free_port()
        self.monitor = work / f"{name}-monitor.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self.boots = 0
        self.serial = work / f"{name}-serial.log"
        self.slot = ""
        self.kernel = work / f"{name}-vmlinuz"
        self.initrd = work / f"{name}-initrd.img"

    def _fat(self, index: int) -> str:
        part = partitions(self.image)[index]
        return f"{self.image}@@{part['start'] * 512}"

    def firmware(self, tryboot: bool) -> str:
        """What the Pi's firmware would boot: the slot's kernel and initramfs (copied out) and
        its kernel command line, with the console on virt's PL011."""
        autoboot = subprocess.run(
            ["mtype", "-i", self._fat(SHARED), "::autoboot.txt"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        section, chosen = "all", {}
        for line in autoboot.splitlines():
            header = re.match(r"\[(\w+)\]", line.strip())
            if header:
                section = header.group(1)
            elif line.startswith("boot_partition="):
                chosen[section] = int(line.split("=", 1)[1])
        number = chosen.get("tryboot", chosen["all"]) if tryboot else chosen["all"]
        self.slot = {2: "A", 3: "B"}[number]
        fat = self._fat(number - 1)
        config = subprocess.run(
            ["mtype", "-i", fat, "::config.txt"], capture_output=True, text=True, check=True
        ).stdout
        kernel = re.search(r"^kernel=(\S+)", config, re.MULTILINE)
        initrd = re.search(r"^initramfs (\S+)", config, re.MULTILINE)
        assert kernel and initrd, config
        for inside, out in ((kernel.group(1), self.kernel), (initrd.group(1), self.initrd)):
            subprocess.run(["mcopy", "-o", "-i", fat, f"::{inside}", str(out)], check=True)
        cmdline = subprocess.run(
            ["mtype", "-i", fat, "::cmdline.txt"], capture_output=True, text=True, check=True
        ).stdout
        kept = [w for w in cmdline.split() if w.startswith(("root=", "rauc.slot=")) or w == "rw"]
        return " ".join([*kept, "console=ttyAMA0", "systemd.journald.forward_to_console=1"])

    def start(self, tryboot: bool = False, usb: bool = False) -> None:
        self.boots += 1
        self.serial = self.work / f"{self.name}-{self.boots}-serial.log"
        self.serial.write_bytes(b"")
        append = self.firmware(tryboot)
        cmd = [
            "qemu-system-aarch64",
            "-M", "virt",
            "-cpu", "cortex-a72",
            "-smp", "2",
            "-m", "2048",
            "-no-reboot",
            "-kernel", str(self.kernel),
            "-initrd", str(self.initrd),
            "-append", append,
            "-drive", f"file={self.image},if=virtio,format=raw",
            "-netdev", f"user,id=n0,hostfwd=tcp:127.0.0.1:{self.port}-:8000",
            "-device", "virtio-net-pci,netdev=n0,romfile=",
            "-device", "virtio-gpu-pci",
            "-display", "none",
            "-serial", f"file:{self.serial}",
            "-monitor", f"unix:{self.monitor},server,nowait",
        ]  # fmt: skip
        if usb:
            cmd += ["-device", "qemu-xhci,id=xhci"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def plug_stick(self, stick: Path, name: str = "stick") -> None:
        """A USB stick (a raw disk image) plugged into the running VM's xHCI port."""
        self.command(f"drive_add 0 if=none,id={name},file={stick},format=raw,readonly=on")
        self.command(f"device_add usb-storage,bus=xhci.0,drive={name},id={name}-dev")

    def unplug_stick(self, name: str = "stick") -> None:
        self.command(f"device_del {name}-dev")

    def wait_reboot(self, timeout: float) -> str | None:
        """After the guest reboots (QEMU ends: -no-reboot): the reboot's command ("" for a
        plain reboot, "0 tryboot"); None when it powered off or ``timeout`` passed."""
        if self.proc is None:
            return None
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self.proc = None
        said = list(RESTART.finditer(self.console()))
        return (said[-1].group(1) or "") if said else None

    def follow_reboot(self, timeout: float, usb: bool = False) -> str:
        """Wait for the guest's reboot and boot what the firmware would; the reboot's command."""
        command = self.wait_reboot(timeout)
        assert command is not None, self.console()[-3000:]
        self.start(tryboot="tryboot" in command, usb=usb)
        return command

    def console(self) -> str:
        return self.serial.read_text(errors="replace")

    def wait_console(self, pattern: str, timeout: float) -> re.Match[str] | None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = re.search(pattern, self.console())
            if found:
                return found
            if self.proc is not None and self.proc.poll() is not None:
                return None
            time.sleep(2)
        return None

    def healthz(self) -> tuple[int, str] | None:
        url = f"https://127.0.0.1:{self.port}/healthz"
        try:
            with urllib.request.urlopen(url, timeout=10, context=GUEST_TLS) as answer:
                return int(answer.status), answer.read().decode(errors="replace")
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read().decode(errors="replace")
        except (OSError, ValueError):
            return None

    def wait_healthz(self, timeout: float) -> tuple[int, str] | None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            answer = self.healthz()
            if answer is not None:
                return answer
            time.sleep(3)
        return None

    def command(self, line: str) -> str:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(self.monitor))
            sock.settimeout(5)
            sock.sendall(line.encode() + b"\n")
            time.sleep(1)
            try:
                return sock.recv(65536).decode(errors="replace")
            except OSError:
                return ""

    def screendump(self, out: Path) -> None:
        self.command(f"screendump {out}")
        end = time.monotonic() + 20
        while not out.is_file() and time.monotonic() < end:
            time.sleep(1)

    def power_off(self, timeout: float = 180) -> None:
        """The power button (systemd shuts down cleanly); QEMU is killed after ``timeout``."""
        if self.proc is None:
            return
        with contextlib.suppress(OSError):  # QEMU may be gone already
            self.command("system_powerdown")
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            logger.warning("%s did not power off in %s s: killing QEMU", self.name, timeout)
            self.proc.kill()
            self.proc.wait(30)
        self.proc = None


def _extract(image: Path, index: int, out: Path) -> Path:
    part = partitions(image)[index]
    dd = [
        "dd",
        f"if={image}",
        f"of={out}",
        "bs=4M",
        f"skip={part['start'] * 512}",
        f"count={part['size'] * 512}",
        "iflag=skip_bytes,count_bytes",
        "conv=sparse",
        "status=none",
    ]
    subprocess.run(dd, check=True)
    return out


def _put_back(image: Path, index: int, part_file: Path) -> None:
    part = partitions(image)[index]
    dd = [
        "dd",
        f"if={part_file}",
        f"of={image}",
        "bs=4M",
        f"seek={part['start'] * 512}",
        "oflag=seek_bytes",
        "conv=notrunc,sparse",
        "status=none",
    ]
    subprocess.run(dd, check=True)


class RootReader:
    """A slot's ext4 root and the data partition of a powered-off disk image, read with
    debugfs: ``/var/lib/mirror`` and ``/var/log/journal`` are read from the data partition
    (where the card keeps them), everything else from the slot's root."""

    def __init__(self, image: Path, work: Path, slot: str = "A") -> None:
        self.part = _extract(image, ROOT[slot], work / "root.ext4")
        self.data = _extract(image, DATA, work / "data.ext4")
        self.work = work

    def _where(self, path: str) -> tuple[Path, str]:
        for prefix, inside in (("/var/lib/mirror", "/mirror"), ("/var/log/journal", "/journal")):
            if path == prefix or path.startswith(prefix + "/"):
                return self.data, inside + path[len(prefix) :]
        return self.part, path

    def read(self, path: str) -> bytes | None:
        out = self.work / "dumped"
        out.unlink(missing_ok=True)
        part, inside = self._where(path)
        subprocess.run(
            ["debugfs", "-R", f"dump {inside} {out}", str(part)],
            capture_output=True,
            check=False,
        )
        return out.read_bytes() if out.is_file() else None

    def exists(self, path: str) -> bool:
        part, inside = self._where(path)
        done = subprocess.run(
            ["debugfs", "-R", f"stat {inside}", str(part)],
            capture_output=True,
            text=True,
            check=False,
        )
        return "Inode:" in done.stdout

    def journal(self) -> str:
        folder = self.work / "journal"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        subprocess.run(
            ["debugfs", "-R", f"rdump /journal {folder}", str(self.data)],
            capture_output=True,
            check=False,
        )
        done = subprocess.run(
            ["journalctl", "-D", str(folder / "journal"), "-o", "short", "--no-pager"],
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout

    def block_count(self) -> int:
        """The data partition's (the one the first boot grows)."""
        done = subprocess.run(
            ["dumpe2fs", "-h", str(self.data)], capture_output=True, text=True, check=True
        )
        found = re.search(r"^Block count:\s+(\d+)", done.stdout, re.MULTILINE)
        return int(found.group(1)) if found else 0

    def close(self) -> None:
        self.part.unlink(missing_ok=True)
        self.data.unlink(missing_ok=True)


def inject(
    image: Path, work: Path, files: dict[str, str], links: dict[str, str], slot: str = "A"
) -> None:
    """Write test-only files and links into a copy's slot root (debugfs -w), in place."""
    part = _extract(image, ROOT[slot], work / "inject-root.ext4")
    commands = []
    for n, (path, text) in enumerate(sorted(files.items())):
        local = work / f"inject-{n}"
        local.write_text(text)
        local.chmod(0o644)
        # (debugfs reports a folder that exists or a file that does not, and goes on)
        commands += [f"mkdir {Path(path).parent}", f"rm {path}", f"write {local} {path}"]
    commands += [f"symlink {link} {target}" for link, target in sorted(links.items())]
    script = work / "inject.debugfs"
    script.write_text("\n".join(commands) + "\n")
    subprocess.run(["debugfs", "-w", "-f", str(script), str(part)], capture_output=True, check=True)
    _put_back(image, ROOT[slot], part)
    part.unlink()


def put_boot_file(image: Path, name: str, text: str, work: Path) -> None:
    """Write ``name`` on the card's shared FAT partition (what an installer edits), with mtools."""
    boot = partitions(image)[SHARED]
    local = work / f"boot-{name}"
    local.write_text(text)
    fat = f"{image}@@{boot['start'] * 512}"
    subprocess.run(["mcopy", "-o", "-i", fat, str(local), f"::{name}"], check=True)


PROBE = re.compile(r"mirror-probe: (.*)")


def probes(console: str, since: int = 0) -> list[dict[str, str]]:
    """The test probe's lines on the console after offset ``since``: ``systemctl show``'s
    ``ActiveState``, ``SubState``, ``NRestarts`` of mirror.service and ``problem`` (what
    ``/run/mirror/venue-problem`` held)."""
    found = []
    for match in PROBE.finditer(console, since):
        line = match.group(1)
        fields, _, problem = line.partition("problem=")
        values = dict(word.split("=", 1) for word in fields.split() if "=" in word)
        values["problem"] = problem.strip().strip("[]")
        found.append(values)
    return found


# the guest's own certificate, made at its first start (its fingerprint: test_image_boot.py)
GUEST_TLS = ssl.create_default_context()
GUEST_TLS.check_hostname = False
GUEST_TLS.verify_mode = ssl.CERT_NONE
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


class AdminPage:
    """A staff member's browser on the guest's admin page (cookies, CSRF tokens)."""

    def __init__(self, port: int) -> None:
        import http.cookiejar

        self.base = f"https://127.0.0.1:{port}"
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()),
            urllib.request.HTTPSHandler(context=GUEST_TLS),
        )

    def _open(self, request: urllib.request.Request | str, data: bytes | None = None) -> Any:
        """``opener.open``, again after a dropped connection: under TCG, with the mirror busy
        on both emulated cores, a TLS handshake can miss the front's 10 s limit."""
        for attempt in range(3):
            try:
                return self.opener.open(request, data=data, timeout=300)
            except (http.client.RemoteDisconnected, ConnectionError, urllib.error.URLError):
                if attempt == 2:
                    raise
                time.sleep(5)
        raise AssertionError("unreachable")

    def get(self, path: str) -> tuple[str, str]:
        """The page's final address and its text."""
        with self._open(self.base + path) as page:
            return str(page.geturl()), page.read().decode(errors="replace")

    def _token(self, path: str) -> str:
        found = _CSRF.search(self.get(path)[1])
        return found.group(1) if found else ""

    def form(self, path: str, fields: dict[str, str]) -> str:
        import urllib.parse

        data = urllib.parse.urlencode({**fields, "csrf_token": self._token(path)})
        with self._open(self.base + path, data.encode()) as answer:
            return str(answer.read().decode(errors="replace"))

    def login(self, password: str) -> bool:
        """Whether ``password`` logs the admin in."""
        self.form("/login", {"username": "admin", "password": password})
        where, _ = self.get("/password")
        return not where.rstrip("/").endswith("/login")


def change_password(port: int, old: str, new: str) -> str:
    """Log in as admin with ``old`` through the admin page and set ``new``; where the admin
    page then lands (``/login`` when the login failed)."""
    page = AdminPage(port)
    if not page.login(old):
        return page.get("/password")[0]
    page.form("/password", {"current": old, "new": new, "confirm": new})
    return page.get("/")[0]
