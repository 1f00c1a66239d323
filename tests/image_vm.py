"""A copy of a built image booted in qemu-system-aarch64 (-M virt, TCG), seen from outside.

The kernel and initramfs are read out of the image's own FAT partition (mtools);
the serial console goes to a file (the journal is forwarded to it); the admin
page is reached through a forwarded loopback port; QEMU's monitor (a unix socket)
powers the VM down and takes ``screendump`` pictures. After power-off the root's
files and journal are read from the disk image with e2fsprogs' ``debugfs`` and
the host's ``journalctl`` (no mounting, no loop devices).
"""

from __future__ import annotations

import contextlib
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

logger = logging.getLogger(__name__)

MIB = 1024**2


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
        self.serial = work / f"{name}-serial.log"
        self.monitor = work / f"{name}-monitor.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        boot = partitions(image)[0]
        self.kernel = work / f"{name}-vmlinuz"
        self.initrd = work / f"{name}-initrd.img"
        fat = f"{image}@@{boot['start'] * 512}"
        config = subprocess.run(
            ["mtype", "-i", fat, "::config.txt"], capture_output=True, text=True, check=True
        ).stdout
        # the files the Pi's firmware would load: config.txt's kernel= and initramfs lines
        kernel = re.search(r"^kernel=(\S+)", config, re.MULTILINE)
        initrd = re.search(r"^initramfs (\S+)", config, re.MULTILINE)
        assert kernel and initrd, config
        for inside, out in ((kernel.group(1), self.kernel), (initrd.group(1), self.initrd)):
            subprocess.run(["mcopy", "-o", "-i", fat, f"::{inside}", str(out)], check=True)

    def start(self) -> None:
        self.serial.write_bytes(b"")
        cmd = [
            "qemu-system-aarch64",
            "-M", "virt",
            "-cpu", "cortex-a72",
            "-smp", "2",
            "-m", "2048",
            "-kernel", str(self.kernel),
            "-initrd", str(self.initrd),
            "-append",
            "root=LABEL=RASPIROOT rw console=ttyAMA0 systemd.journald.forward_to_console=1",
            "-drive", f"file={self.image},if=virtio,format=raw",
            "-netdev", f"user,id=n0,hostfwd=tcp:127.0.0.1:{self.port}-:8000",
            "-device", "virtio-net-pci,netdev=n0,romfile=",
            "-device", "virtio-gpu-pci",
            "-display", "none",
            "-serial", f"file:{self.serial}",
            "-monitor", f"unix:{self.monitor},server,nowait",
        ]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

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


class RootReader:
    """The ext4 root partition of a powered-off disk image, read with debugfs."""

    def __init__(self, image: Path, work: Path) -> None:
        root = partitions(image)[1]
        self.part = work / "root.ext4"
        dd = [
            "dd",
            f"if={image}",
            f"of={self.part}",
            "bs=4M",
            f"skip={root['start'] * 512}",
            f"count={root['size'] * 512}",
            "iflag=skip_bytes,count_bytes",
            "conv=sparse",
            "status=none",
        ]
        subprocess.run(dd, check=True)
        self.work = work

    def read(self, path: str) -> bytes | None:
        out = self.work / "dumped"
        out.unlink(missing_ok=True)
        subprocess.run(
            ["debugfs", "-R", f"dump {path} {out}", str(self.part)],
            capture_output=True,
            check=False,
        )
        return out.read_bytes() if out.is_file() else None

    def exists(self, path: str) -> bool:
        done = subprocess.run(
            ["debugfs", "-R", f"stat {path}", str(self.part)],
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
            ["debugfs", "-R", f"rdump /var/log/journal {folder}", str(self.part)],
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
        done = subprocess.run(
            ["dumpe2fs", "-h", str(self.part)], capture_output=True, text=True, check=True
        )
        found = re.search(r"^Block count:\s+(\d+)", done.stdout, re.MULTILINE)
        return int(found.group(1)) if found else 0

    def close(self) -> None:
        self.part.unlink(missing_ok=True)


def inject(image: Path, work: Path, files: dict[str, str], links: dict[str, str]) -> None:
    """Write test-only files and links into a copy's root partition (debugfs -w), in place."""
    root = partitions(image)[1]
    reader = RootReader(image, work)
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
    subprocess.run(
        ["debugfs", "-w", "-f", str(script), str(reader.part)], capture_output=True, check=True
    )
    dd = [
        "dd",
        f"if={reader.part}",
        f"of={image}",
        "bs=4M",
        f"seek={root['start'] * 512}",
        "oflag=seek_bytes",
        "conv=notrunc,sparse",
        "status=none",
    ]
    subprocess.run(dd, check=True)
    reader.close()


def put_boot_file(image: Path, name: str, text: str, work: Path) -> None:
    """Write ``name`` on the image's FAT boot partition (what an installer edits), with mtools."""
    boot = partitions(image)[0]
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


def change_password(port: int, old: str, new: str) -> str:
    """Log in as admin with ``old`` through the admin page and set ``new``; where the admin
    page then lands (``/login`` when the login failed)."""
    import http.cookiejar
    import urllib.parse

    base = f"https://127.0.0.1:{port}"
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()),
        urllib.request.HTTPSHandler(context=GUEST_TLS),
    )

    def form(path: str, fields: dict[str, str]) -> str:
        with opener.open(base + path, timeout=120) as page:
            found = _CSRF.search(page.read().decode(errors="replace"))
        data = urllib.parse.urlencode({**fields, "csrf_token": found.group(1) if found else ""})
        with opener.open(base + path, data=data.encode(), timeout=120) as answer:
            return str(answer.read().decode(errors="replace"))

    form("/login", {"username": "admin", "password": old})
    with opener.open(base + "/password", timeout=120) as page:
        if page.geturl().rstrip("/").endswith("/login"):
            return str(page.geturl())  # the login failed
    form("/password", {"current": old, "new": new, "confirm": new})
    with opener.open(base + "/", timeout=120) as page:
        return str(page.geturl())
