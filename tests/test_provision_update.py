"""An update on a running device: a new venv beside the one in use, the link switched, the
service restarted and checked, and the previous venv back when the new one is unhealthy.

The project wheels are small real ones built by pip (``face-mirror`` 1.0.0, 1.1.0 and a
broken 1.2.0) whose ``mirror`` command serves ``/healthz`` over HTTPS with the device's
certificate, on the port ``web.yaml`` names: "ok" with its version, or (the broken one)
503 forever. The venvs are made by the real provisioning (``python -m venv``, pip from
its wheel, offline) in a temporary root taken for the live system, and the service is
simulated by :class:`ProcessService`, which really starts ``ROOT/opt/mirror/venv/bin/
mirror run`` (through the link) the way systemd's ExecStart does.
"""

from __future__ import annotations

import ensurepip
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from appliance.device.certificate import ensure_certificate
from appliance.modelstore import ModelStore
from appliance.modelstore.hashing import sha256_file
from provisioning.bundle import INDEX
from provisioning.bundle_build import build_bundle
from provisioning.errors import ProvisionError
from provisioning.plan import WebListen
from provisioning.provision import Outcome, Request, provision
from provisioning.runner import Runner, RunResult, run_subprocess
from provisioning.targets import this_machine
from provisioning.venvs import STAMP
from tests.waiting import wait_for
from tests.wheels import PIP

PROFILE = "generic-cpu"  # extras [cpu]: the fake project declares it
GOOD = ("1.0.0", "1.1.0")
BROKEN = "1.2.0"
BROKEN_TIMEOUT_S = 6.0  # the broken version never becomes healthy: no need to wait longer

SERVER = """
import json, os, re, ssl, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = {version!r}
HEALTHY = {healthy!r}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if HEALTHY:
            code, body = 200, {{"status": "ok", "running": True, "version": VERSION}}
        else:
            code, body = 503, {{"status": "degraded", "running": False,
                                "reason": "camera missing: /dev/video0", "version": VERSION}}
        raw = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


def main():
    web = os.path.join(os.environ["MIRROR_DATA_DIR"], "web")
    with open(os.path.join(web, "web.yaml")) as handle:
        port = int(re.search(r"^port: *(\\d+)", handle.read(), re.M).group(1))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(web, "tls-cert.pem"), os.path.join(web, "tls-key.pem"))
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print("mirror", VERSION, sys.argv[1:], flush=True)
    server.serve_forever()
"""


def _project_wheel(folder: Path, version: str, *, healthy: bool) -> Path:
    src = folder / f"src-{version}"
    src.mkdir(parents=True)
    (src / "fake_mirror.py").write_text(SERVER.format(version=version, healthy=healthy))
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "face-mirror"\nversion = "{version}"\n'
        "[project.optional-dependencies]\ncpu = []\n"
        '[project.scripts]\nmirror = "fake_mirror:main"\n'
        '[tool.setuptools]\npy-modules = ["fake_mirror"]\n'
    )
    cmd = [*PIP, "wheel", "--no-deps", "--no-build-isolation", "-w", str(folder), str(src)]
    built = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stderr
    shutil.rmtree(src)
    return folder / f"face_mirror-{version}-py3-none-any.whl"


def _pip_wheel() -> Path:
    """pip's own wheel, as the standard library bundles it (the venv step runs pip from it)."""
    bundled = Path(ensurepip.__file__).parent / "_bundled"
    (wheel,) = bundled.glob("pip-*-py3-none-any.whl")
    return wheel


@pytest.fixture(scope="module")
def models_bundle(tmp_path_factory: pytest.TempPathFactory, store: ModelStore) -> Path:
    out = tmp_path_factory.mktemp("models-bundle")
    build_bundle(out, store.manifest, source=store.cache_dir, profile=PROFILE)
    return out


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory, models_bundle: Path) -> dict[str, Path]:
    """One bundle per version: the same models, pip and that version's project wheel."""
    wheels = tmp_path_factory.mktemp("project-wheels")
    made = {}
    for version in (*GOOD, BROKEN):
        wheel = _project_wheel(wheels, version, healthy=version != BROKEN)
        made[version] = _bundle(tmp_path_factory.mktemp(f"bundle-{version}"), models_bundle, wheel)
    return made


def _bundle(out: Path, models_bundle: Path, project: Path) -> Path:
    (out / "models").symlink_to(models_bundle / "models", target_is_directory=True)
    (out / "wheels").mkdir()
    for wheel in (project, _pip_wheel()):
        shutil.copyfile(wheel, out / "wheels" / wheel.name)
    index = json.loads((models_bundle / INDEX).read_text())
    for wheel in (out / "wheels").iterdir():
        index["files"][f"wheels/{wheel.name}"] = {
            "sha256": sha256_file(wheel),
            "size": wheel.stat().st_size,
        }
    version = project.name.split("-")[1]
    index["target"] = {**this_machine().to_json(), "extras": ["cpu"]}
    index["project"] = {"name": "face-mirror", "version": version, "wheel": project.name}
    index["wheels"] = {"included": True, "requirements": [], "commands": []}
    (out / INDEX).write_text(json.dumps(index))
    return out


class ProcessService:
    """The unit as systemd runs it: ``ROOT/opt/mirror/venv/bin/mirror run ...`` through the
    link, with ``MIRROR_DATA_DIR``; restart stops the running one first. Active while the
    process lives."""

    def __init__(self, root: Path, log: Path) -> None:
        self.root = root
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.started: list[str] = []  # the venv folder each start ran from

    def restart(self) -> None:
        self.stop()
        link = self.root / "opt/mirror/venv"
        self.started.append(Path(os.path.realpath(link)).name)
        env = {"PATH": "/usr/bin:/bin", "MIRROR_DATA_DIR": str(self.root / "var/lib/mirror")}
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [str(link / "bin/mirror"), "run", "--source", "demo", "--no-preview"],
                env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip

    def is_active(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


class Device:
    """A temporary root taken for a running system (systemd's /run/systemd/system there)."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.port = port
        (root / "run/systemd/system").mkdir(parents=True)
        self.service = ProcessService(root, root.parent / "service.log")
        self.said: list[str] = []

    def install(
        self, bundle: Path, timeout_s: float = 120.0, runner: Runner = run_subprocess
    ) -> Outcome:
        request = Request(
            root=self.root, bundle=bundle, profile=PROFILE, live=True,
            host_python=Path(sys.executable), web=WebListen("127.0.0.1", self.port),
            health_timeout_s=timeout_s,
        )  # fmt: skip
        return provision(
            request, progress=False, runner=runner,
            which=lambda _name: None,  # the system's own systemd tools are not run
            say=self.said.append, service=self.service,
        )  # fmt: skip

    def boot(self) -> None:
        """The first start: the certificate made (as ``mirror run`` makes it), the service up."""
        ensure_certificate(self.root / "var/lib/mirror/web")
        self.service.restart()
        assert wait_for(lambda: self.version() is not None, timeout_s=60)

    def version(self) -> str | None:
        """The version answering /healthz "ok", checked against the device's certificate."""
        context = ssl.create_default_context(
            cafile=str(self.root / "var/lib/mirror/web/tls-cert.pem")
        )
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{self.port}/healthz", context=context, timeout=5
            ) as answer:
                body = json.load(answer)
        except OSError:
            return None
        return str(body["version"]) if body.get("status") == "ok" else None

    def venvs(self) -> list[str]:
        return sorted(p.name for p in (self.root / "opt/mirror/venvs").iterdir())

    def link(self, name: str = "venv") -> str:
        return os.readlink(self.root / "opt/mirror" / name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def device(tmp_path: Path) -> Iterator[Device]:
    made = Device(tmp_path / "root", _free_port())
    yield made
    made.service.stop()


def _venv_of(device: Device, version: str) -> str:
    (name,) = [n for n in device.venvs() if n.startswith(f"{version}-")]
    return name


def test_an_update_is_checked_and_a_broken_one_rolled_back(
    device: Device, bundles: dict[str, Path]
) -> None:
    first = device.install(bundles["1.0.0"])
    assert first.report is not None
    v1 = _venv_of(device, "1.0.0")
    assert device.link() == f"venvs/{v1}"
    assert device.service.started == []  # a first install: the service starts at boot
    device.boot()
    assert device.version() == "1.0.0"

    device.install(bundles["1.1.0"])
    v2 = _venv_of(device, "1.1.0")
    assert (device.link(), device.link("venv.previous")) == (f"venvs/{v2}", f"venvs/{v1}")
    assert device.service.started == [v1, v2]
    assert device.version() == "1.1.0"
    assert f"restarting mirror.service on {v2}" in device.said
    assert f"mirror.service is healthy on {v2}" in device.said

    again = device.install(bundles["1.1.0"])  # the same bundle again: nothing at all
    assert again.report is not None and again.report.changed == []
    assert device.service.started == [v1, v2]

    with pytest.raises(ProvisionError) as failed:
        device.install(bundles[BROKEN], timeout_s=BROKEN_TIMEOUT_S)
    message = str(failed.value)
    assert "\n" not in message
    assert message.startswith(f"the new version {BROKEN}-")
    assert "failed its health check within 6 s (/healthz says degraded: camera missing" in message
    assert message.endswith(f"the previous one ({v2}) runs again")
    assert device.service.started[2].startswith(f"{BROKEN}-")  # the broken one did run
    assert device.service.started[3:] == [v2]
    assert (device.link(), device.link("venv.previous")) == (f"venvs/{v2}", f"venvs/{v1}")
    assert device.venvs() == sorted([v1, v2])  # the broken venv removed
    assert device.version() == "1.1.0"


def test_an_interrupted_install_changes_nothing_and_is_cleaned_at_the_next(
    device: Device, bundles: dict[str, Path]
) -> None:
    device.install(bundles["1.0.0"])
    device.boot()
    v1 = _venv_of(device, "1.0.0")

    class Killed(BaseException):
        """The installer killed too (power cut, kill -9): no code of it runs after pip."""

    def pip_killed(argv: Sequence[str], env: Mapping[str, str]) -> RunResult:
        if "install" not in argv:
            return run_subprocess(argv, env)
        pip = subprocess.Popen(list(argv), env=dict(env), stdout=subprocess.DEVNULL)
        pip.kill()
        pip.wait(timeout=30)
        raise Killed

    with pytest.raises(Killed):
        device.install(bundles["1.1.0"], runner=pip_killed)
    unfinished = _venv_of(device, "1.1.0")
    assert not (device.root / "opt/mirror/venvs" / unfinished / STAMP).exists()
    assert device.link() == f"venvs/{v1}" and device.service.started == [v1]
    assert device.version() == "1.0.0"
    # another one, left by an older interrupted install
    (device.root / "opt/mirror/venvs/0.9.0-0123456789ab/bin").mkdir(parents=True)

    device.install(bundles["1.1.0"])
    v2 = _venv_of(device, "1.1.0")
    assert v2 == unfinished and (device.root / "opt/mirror/venvs" / v2 / STAMP).is_file()
    removed = [line for line in device.said if line.startswith("removed the unfinished venv")]
    assert len(removed) == 2
    assert device.venvs() == sorted([v1, v2])
    assert device.link() == f"venvs/{v2}" and device.version() == "1.1.0"


def test_an_older_plain_venv_is_adopted_and_is_the_way_back(
    device: Device, bundles: dict[str, Path]
) -> None:
    """An install from before this change: a plain folder at /opt/mirror/venv."""
    plain = device.root / "opt/mirror/venv"
    wheels = bundles["1.0.0"] / "wheels"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(plain)], check=True)
    pip = [str(plain / "bin/python"), f"{_pip_wheel()}/pip", "install", "-q", "--isolated"]
    pip += ["--no-index", "--find-links", str(wheels), "face-mirror==1.0.0"]
    subprocess.run(pip, check=True, capture_output=True, timeout=300)
    (plain / STAMP).write_text(json.dumps({"project": "face-mirror", "version": "1.0.0"}))
    web = device.root / "var/lib/mirror/web"
    web.mkdir(parents=True)
    (web / "web.yaml").write_text(f"host: 127.0.0.1\nport: {device.port}\n")
    device.boot()
    assert device.version() == "1.0.0"

    with pytest.raises(ProvisionError, match="runs again"):
        device.install(bundles[BROKEN], timeout_s=BROKEN_TIMEOUT_S)
    assert plain.is_symlink()
    (adopted,) = device.venvs()
    assert adopted.startswith("1.0.0-") and device.link() == f"venvs/{adopted}"
    assert device.version() == "1.0.0"  # run again from its new place

    device.install(bundles["1.1.0"])
    v2 = _venv_of(device, "1.1.0")
    assert (device.link(), device.link("venv.previous")) == (f"venvs/{v2}", f"venvs/{adopted}")
    assert device.version() == "1.1.0"


def test_a_health_timeout_that_is_not_above_zero_is_one_error_line(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "appliance.cli.main", "provision", "--root", str(tmp_path)]
    done = subprocess.run(
        [*cli, "--bundle", str(tmp_path / "bundle"), "--health-timeout", "0"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "mirror: error: --health-timeout must be above 0 seconds, got 0.0"
    ]
