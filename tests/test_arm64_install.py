"""The install on a Raspberry Pi's OS, emulated: Debian 12 and 13 arm64 roots, provisioned offline.

For each suite: a Debian arm64 root (mmdebstrap, cached as a tarball under
``~/.cache/face-mirror/arm64``, extracted fresh), an offline bundle made for
that platform (``mirror provision bundle --target``), ``mirror provision``
into the root; then, inside the root (qemu-user through binfmt): ``mirror
doctor`` on a faked Raspberry Pi 4 picks rpi4-cpu, ``mirror swap-image``
swaps a real photo, and the unit is enabled and passes ``systemd-analyze
verify``. Run by ``python -m tests.arm64`` (``make arm64-test``); the regular
run deselects it (``-m "not arm64"``). It skips, with the reason, when it
cannot run here (not root, no binfmt_misc, no emulator); once it runs,
every failure is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import cv2
import numpy as np
import numpy.typing as npt
import pytest

from appliance.inference.litert import LiteRTBackend
from appliance.modelstore import ModelStore
from appliance.vision.analyzer import FaceAnalyzer
from tests.arm64 import install
from tests.arm64.chroot import in_root, mounts_under
from tests.arm64.devicetree import CPUINFO, RPI4_MODEL, write_rpi4
from tests.arm64.host import readiness
from tests.arm64.roots import cached_root, extract
from tests.arm64.suites import SUITES, Suite
from tests.arm64.timings import Timings

pytestmark = pytest.mark.arm64

REPO = Path(__file__).resolve().parent.parent
TIMINGS = Timings(log=REPO / "test-output" / "arm64-timings.txt")

DATA_DIR = PurePosixPath("/var/lib/mirror")
VENV = PurePosixPath("/opt/mirror/venv")
MIRROR = str(VENV / "bin" / "mirror")
UNIT = PurePosixPath("/etc/systemd/system/mirror.service")
WANTS = PurePosixPath("/etc/systemd/system/multi-user.target.wants/mirror.service")
FAKE_PI = PurePosixPath("/srv/fake-rpi4")  # the faked Pi 4's device tree, cpuinfo, meminfo
CHECK_TIMEOUT_S = 300
# Mean absolute difference (0-255, over the face box) that only a swapped face reaches.
SWAPPED_FACE_DIFF = 8.0


@dataclass(frozen=True)
class Installed:
    suite: Suite
    root: Path  # the provisioned root on this machine

    def host(self, path: PurePosixPath) -> Path:
        return self.root / str(path).lstrip("/")

    def run(self, argv: list[str], what: str) -> subprocess.CompletedProcess[str]:
        """``argv`` inside the root with the device's data dir, timed under ``what``."""
        with TIMINGS.phase(self.suite.codename, what):
            proc = in_root(
                self.root,
                argv,
                env={"MIRROR_DATA_DIR": str(DATA_DIR)},
                cpuinfo=self.host(FAKE_PI) / CPUINFO,  # the faked Pi's, not this x86 host's
                timeout=CHECK_TIMEOUT_S,
            )
        return proc


@pytest.fixture(scope="module", params=SUITES, ids=lambda suite: suite.codename)
def installed(request: pytest.FixtureRequest) -> Iterator[Installed]:
    reason = readiness()
    if reason is not None:
        pytest.skip(f"arm64 install test: {reason}")
    suite: Suite = request.param
    with TIMINGS.phase(suite.codename, "root") as notes:
        tar, hit = cached_root(suite)
        notes.append("cache hit" if hit else "built by mmdebstrap")
    work = Path(tempfile.mkdtemp(prefix=f"mirror-arm64-{suite.codename}-"))
    try:
        root, bundle = work / "root", work / "bundle"
        with TIMINGS.phase(suite.codename, "extract"):
            extract(tar, root)
        write_rpi4(root / str(FAKE_PI).lstrip("/"))
        with TIMINGS.phase(suite.codename, "bundle"):
            made = install.make_bundle(suite, bundle)
        if made.returncode != 0:
            pytest.fail(install.explain(" ".join(install.bundle_command(suite, bundle)), made))
        with TIMINGS.phase(suite.codename, "provision"):
            done = install.provision(root, bundle)
        if done.returncode != 0:
            pytest.fail(install.explain(" ".join(install.provision_command(root, bundle)), done))
        yield Installed(suite, root)
    finally:
        _remove(work)


def _remove(work: Path) -> None:
    """Delete the run's root, but never through a mount (a bound /dev would go with it)."""
    left = mounts_under(work)
    if left:
        pytest.fail(f"still mounted, {work} kept: {', '.join(left)}")
    shutil.rmtree(work, ignore_errors=True)


def test_the_venv_runs_the_roots_own_python_emulated(installed: Installed) -> None:
    probe = "import platform, sys; print(platform.machine(), '%d.%d' % sys.version_info[:2])"
    proc = installed.run([str(VENV / "bin" / "python"), "-c", probe], "venv python")
    assert proc.returncode == 0, install.explain("venv python", proc)
    assert proc.stdout.split() == ["aarch64", installed.suite.python]


def test_the_cameras_jpeg_decode_runs_on_the_roots_numpy(installed: Installed) -> None:
    """simplejpeg's aarch64 wheel with the numpy the profile pins there (below 2 on
    bookworm's Python 3.11): an MJPG camera frame decodes in the device's venv, and a
    1280x720 one with restart markers in two halves at once, to the same pixels."""
    probe = (
        "import os, cv2, numpy as np; from appliance.media.jpeg import decode_jpeg; "
        "from appliance.media.jpeg_halves import HalvesDecoder; "
        "ok, data = cv2.imencode('.jpg', np.full((48, 64, 3), 90, np.uint8)); "
        "image = decode_jpeg(data.tobytes()); "
        "big = cv2.resize(np.indices((72, 128)).sum(0).astype(np.uint8) * 2, (1280, 720)); "
        "ok, hd = cv2.imencode('.jpg', np.dstack([big, big[::-1], big[:, ::-1]]),"
        " [cv2.IMWRITE_JPEG_RST_INTERVAL, 80]); "
        "d = HalvesDecoder(); halves = d.decode(hd.tobytes()); d.close(); "
        "same = bool(np.array_equal(halves, decode_jpeg(hd.tobytes()))); "
        "print(image.shape[1], image.shape[0], int(image.mean()), np.__version__, same,"
        " d.halves, len(os.sched_getaffinity(0)))"
    )
    proc = installed.run([str(VENV / "bin" / "python"), "-c", probe], "jpeg decode")
    assert proc.returncode == 0, install.explain("jpeg decode", proc)
    width, height, level, _numpy, same, halves, cpus = proc.stdout.split()
    assert (width, height) == ("64", "48") and abs(int(level) - 90) <= 1
    assert same == "True"
    assert halves == ("1" if int(cpus) > 1 else "0")


def test_doctor_picks_rpi4_cpu_on_a_faked_pi4(installed: Installed) -> None:
    argv = [MIRROR, "doctor", "--root", str(FAKE_PI), "--json"]
    proc = installed.run(argv, "doctor --root (faked Pi 4)")
    assert proc.returncode == 0, install.explain("mirror doctor", proc)
    report = json.loads(proc.stdout)
    assert report["facts"]["arch"] == "aarch64"
    assert report["facts"]["device_tree_model"] == RPI4_MODEL
    assert report["profile"]["name"] == install.PROFILE
    assert not report["profile"]["overridden"]
    assert RPI4_MODEL in report["profile"]["reason"]


@pytest.fixture(scope="module")
def analyzer(store: ModelStore) -> FaceAnalyzer:
    return FaceAnalyzer.from_store(store, LiteRTBackend())


def _read(path: Path) -> npt.NDArray[np.uint8]:
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert image is not None, f"cannot read {path}"
    return np.asarray(image, np.uint8)


def test_swap_image_swaps_a_real_photo(
    installed: Installed, analyzer: FaceAnalyzer, tmp_path: Path
) -> None:
    photo = DATA_DIR / "models" / "astronaut.png"
    out = PurePosixPath("/tmp/swapped.png")
    argv = [MIRROR, "swap-image", "--identity", "grace_hopper", "--input", str(photo)]
    proc = installed.run([*argv, "--output", str(out)], "swap-image")
    assert proc.returncode == 0, install.explain("mirror swap-image", proc)

    before, after = _read(installed.host(photo)), _read(installed.host(out))
    assert after.shape == before.shape
    faces = analyzer.detect(before)
    assert faces, "no face found in the input on the host"
    x0, y0, x1, y1 = (round(v) for v in faces[0].box)
    box = (slice(max(y0, 0), y1), slice(max(x0, 0), x1))
    diff = np.abs(after[box].astype(np.int16) - before[box].astype(np.int16)).mean()
    assert diff > SWAPPED_FACE_DIFF, f"face box barely changed (mean |diff| {diff:.1f})"

    # The same swap on this x86 host, for the record: how far emulated arm64 lands from it.
    host_out = tmp_path / "host.png"
    on_host = [*argv[1:4], "--input", str(installed.host(photo)), "--output", str(host_out)]
    host = subprocess.run(
        [install.host_mirror(), *on_host],
        capture_output=True,
        text=True,
        timeout=CHECK_TIMEOUT_S,
        check=False,
    )
    assert host.returncode == 0, install.explain("host swap-image", host)
    same = _read(host_out)
    gap = np.abs(after[box].astype(np.int16) - same[box].astype(np.int16)).mean()
    print(f"arm64 {installed.suite.codename}: face box |arm64 - x86| {gap:.2f}, |swap| {diff:.1f}")


def test_unit_is_enabled_and_verifies(installed: Installed) -> None:
    unit, wants = installed.host(UNIT), installed.host(WANTS)
    assert unit.is_file(), f"{UNIT} not written"
    assert wants.is_symlink(), f"{WANTS} missing: the unit is not enabled"
    link = PurePosixPath(os.readlink(wants))
    target = link if link.is_absolute() else PurePosixPath(WANTS.parent) / link
    assert installed.host(target).resolve() == unit.resolve()

    enabled = installed.run(["systemctl", "is-enabled", UNIT.name], "systemctl is-enabled")
    assert enabled.stdout.strip() == "enabled", install.explain("systemctl is-enabled", enabled)
    verify = installed.run(["systemd-analyze", "verify", str(UNIT)], "systemd-analyze verify")
    assert verify.returncode == 0, install.explain("systemd-analyze verify", verify)
