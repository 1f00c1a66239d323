"""`mirror provision bundle --vendor DIR`: the parts no reachable index carries, carried.

The vendor files are real of their kind, made here: a wheel built by pip, a Debian
package built by dpkg-deb, a compiled Edge TPU model (a copy of the CPU model: no
edgetpu_compiler here). What a live device would run (dpkg, the venv's pip) goes to a
recording runner; everything else is written under a temporary root.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from appliance.cli.main import main
from appliance.device.catalog import load_profiles
from appliance.modelstore import ModelStore
from appliance.modelstore.hashing import sha256_file
from provisioning.bundle import Bundle, BundleFile, BundleWheels, VendorFile, verify_bundle
from provisioning.bundle_build import build_bundle
from provisioning.in_root import shell_for
from provisioning.layout import Layout
from provisioning.provision import Request, provision
from provisioning.runner import RunResult
from provisioning.targets import this_machine
from provisioning.venv_step import plan_venv
from tests.wheels import PIP, index_reachable

PIP_CACHE = Path.home() / ".cache" / "face-mirror-tests" / "pip"

ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
DEB = f"libedgetpu1-std_16.0_{ARCH}.deb"
WHEEL = "vendor_probe-1.0-py3-none-any.whl"
MODEL = "face_detector_edgetpu.tflite"
CORAL = "rpi4-coral-usb"


def _wheel(folder: Path) -> Path:
    """A real wheel, as a vendor's would be: it depends on a package from the index."""
    src = folder / "src"
    (src / "vendor_probe").mkdir(parents=True)
    (src / "vendor_probe" / "__init__.py").write_text("VALUE = 42\n")
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "vendor-probe"\nversion = "1.0"\ndependencies = ["coloredlogs>=15"]\n'
        '[tool.setuptools]\npackages = ["vendor_probe"]\n'
    )
    cmd = [*PIP, "wheel", "--no-deps", "--no-build-isolation", "-w", str(folder), str(src)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    shutil.rmtree(src)
    return folder / WHEEL


def _deb(folder: Path) -> Path:
    """A real Debian package named as Google's Coral runtime is (no library inside)."""
    tree = folder / "deb"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN" / "control").write_text(
        f"Package: libedgetpu1-std\nVersion: 16.0\nArchitecture: {ARCH}\n"
        "Maintainer: test <test@example.invalid>\nDescription: stand-in\n"
    )
    subprocess.run(
        ["dpkg-deb", "--build", "--root-owner-group", str(tree), str(folder / DEB)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    shutil.rmtree(tree)
    return folder / DEB


@pytest.fixture(scope="module")
def vendor_dir(tmp_path_factory: pytest.TempPathFactory, store: ModelStore) -> Path:
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed (Debian's dpkg)")
    folder = tmp_path_factory.mktemp("vendor")
    _wheel(folder)
    _deb(folder)
    shutil.copyfile(store.path("face_detector_short"), folder / MODEL)
    return folder


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory, store: ModelStore, vendor_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("bundle")
    build_bundle(out, store.manifest, source=store.cache_dir, profile=CORAL, vendor=vendor_dir)
    return out


class Recorder:
    """What a live device would run; ``fails``: argv[0] -> the output it fails with."""

    def __init__(self, fails: Mapping[str, str] | None = None) -> None:
        self.runs: list[tuple[str, ...]] = []
        self.fails = dict(fails or {})

    def __call__(self, argv: Sequence[str], env: Mapping[str, str]) -> RunResult:
        self.runs.append(tuple(argv))
        if argv[0] in self.fails:
            return RunResult(1, self.fails[argv[0]])
        return RunResult(0, "")


def _which(name: str) -> str:
    return f"/usr/bin/{name}"


def test_the_bundle_carries_each_vendor_file_with_its_sha256(
    bundle: Path, vendor_dir: Path, store: ModelStore
) -> None:
    index = json.loads((bundle / "bundle.json").read_text())
    for name in (WHEEL, DEB, MODEL):
        assert index["files"][f"vendor/{name}"]["sha256"] == sha256_file(vendor_dir / name)
    checked = verify_bundle(bundle, store.manifest)
    assert {(v.kind, v.name) for v in checked.vendor} == {
        ("wheel", WHEEL),
        ("deb", DEB),
        ("edgetpu-model", MODEL),
    }
    # a bundle made again without --vendor carries none of them
    again = bundle.parent / "again"
    build_bundle(again, store.manifest, source=store.cache_dir, profile=CORAL)
    shutil.copytree(bundle / "vendor", again / "vendor")  # left over from somewhere
    build_bundle(again, store.manifest, source=store.cache_dir, profile=CORAL)
    assert not (again / "vendor").exists()
    assert verify_bundle(again, store.manifest).vendor == ()


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("notes.txt", "not a wheel (.whl), a Debian package (PACKAGE_VERSION_ARCH.deb) or an "),
        ("libedgetpu.deb", "must be named PACKAGE_VERSION_ARCH.deb"),
        ("face_mesh_edgetpu.tflite", "compiled from face_mesh.tflite, which is no model of"),
        ("onnxruntime_gpu-1.20.0-cp39-cp39-win_amd64.whl", "does not install on this-machine"),
        ("libedgetpu1-std_16.0_riscv64.deb", "is for riscv64, the target"),
    ],
)
def test_a_vendor_file_of_no_known_kind_or_for_another_target_is_one_line(
    capsys: pytest.CaptureFixture[str],
    store: ModelStore,
    tmp_path: Path,
    name: str,
    why: str,
) -> None:
    given = tmp_path / "given"
    given.mkdir()
    (given / name).write_bytes(b"x")
    out = tmp_path / "out"
    args = ["provision", "bundle", str(out), "--from", str(store.cache_dir)]
    assert main([*args, "--vendor", str(given)]) == 1
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("mirror: error: vendor ")
    assert why in err and name in err
    assert not out.exists(), "refused before anything was fetched or written"


def test_a_live_coral_gets_its_runtime_package_and_compiled_models(
    bundle: Path, tmp_path: Path, store: ModelStore
) -> None:
    root = tmp_path / "root"
    request = Request(root=root, bundle=bundle, profile=CORAL, live=True)
    runner = Recorder()
    outcome = provision(request, progress=False, runner=runner, which=_which)
    deb = f"/opt/mirror/vendor/{DEB}"
    assert ("dpkg", "-i", deb) in runner.runs
    assert sha256_file(root / deb.lstrip("/")) == sha256_file(bundle / "vendor" / DEB)
    model = root / "var/lib/mirror/models" / MODEL
    assert sha256_file(model) == sha256_file(store.path("face_detector_short"))
    assert outcome.report is not None
    [venv] = [line for line in outcome.report.deferred if " venv " in line]
    assert f"its vendor wheels ({WHEEL}) are not installed" in venv
    # dpkg has it now: a second run installs nothing again
    status = root / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True)
    status.write_text(
        "Package: libusb-1.0-0\nStatus: install ok installed\nVersion: 2:1.0.26-1\n\n"
        "Package: libedgetpu1-std\nStatus: install ok installed\nPriority: optional\n"
        f"Architecture: {ARCH}\nVersion: 16.0\nDescription: Edge TPU runtime\n"
        " more text: of the description\n"
    )
    again = Recorder()
    second = provision(request, progress=False, runner=again, which=_which)
    assert not any(argv[0] == "dpkg" for argv in again.runs)
    packages = [a for a in second.plan.actions if a.kind == "package"]
    assert [a.status for a in packages] == ["unchanged"]


def test_a_failed_dpkg_is_reported_with_its_mend_and_the_rest_is_written(
    bundle: Path, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    why = (
        "dpkg: error processing package libedgetpu1-std (--install):\n"
        " dependency problems - leaving unconfigured"
    )
    runner = Recorder({"dpkg": why})
    request = Request(root=root, bundle=bundle, profile=CORAL, live=True)
    outcome = provision(request, progress=False, runner=runner, which=_which)
    assert outcome.report is not None
    assert (
        f"dpkg -i /opt/mirror/vendor/{DEB} failed (dependency problems - leaving unconfigured): "
        "install its dependencies (apt-get install -f) and run it again; until then the "
        "Coral's models run on the CPU"
    ) in outcome.report.deferred
    assert (root / "etc/systemd/system/mirror.service").is_file()


def test_a_mounted_root_gets_the_files_and_the_dpkg_command_to_run_there(
    capsys: pytest.CaptureFixture[str], bundle: Path, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    code = main(["provision", "--bundle", str(bundle), "--root", str(root), "--profile", CORAL])
    out, _ = capsys.readouterr()
    assert code == 0
    assert (root / "opt/mirror/vendor" / DEB).is_file()
    assert (root / "var/lib/mirror/models" / MODEL).is_file()
    assert (
        f"note: deferred  package    /opt/mirror/vendor/{DEB} libedgetpu1-std: not run in a "
        f"mounted root: on the device, run `dpkg -i /opt/mirror/vendor/{DEB}` (then "
        "`apt-get install -f` for its dependencies); until then the Coral's models run on the CPU"
    ) in out


def test_a_tampered_vendor_file_is_named_and_nothing_is_written(
    capsys: pytest.CaptureFixture[str], bundle: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    with (copy / "vendor" / DEB).open("ab") as handle:
        handle.write(b"\0")
    root = tmp_path / "root"
    code = main(["provision", "--bundle", str(copy), "--root", str(root), "--profile", CORAL])
    _, err = capsys.readouterr()
    assert code == 1
    [line] = [line for line in err.splitlines() if line.startswith("mirror:")]
    assert line.startswith(f"mirror: error: bundle file {copy / 'vendor' / DEB} has sha256 ")
    assert not root.exists()


def test_vendor_wheels_go_into_the_venv_by_name_with_the_bundles_wheels(
    tmp_path: Path, vendor_dir: Path
) -> None:
    """The venv step alone, on a bundle whose wheels are present (made by hand here: the
    whole wheel set needs the index, see test_provision_venv)."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in ("face_mirror-0.1.0-py3-none-any.whl", "pip-25.0-py3-none-any.whl"):
        (wheels / name).write_bytes(name.encode())

    def entry(path: Path) -> BundleFile:
        return BundleFile(path, sha256_file(path), path.stat().st_size)

    files = {p.name: entry(p) for p in wheels.iterdir()}
    made = BundleWheels(
        files, this_machine(), ("cpu",), "0.1.0", "face_mirror-0.1.0-py3-none-any.whl"
    )
    vendor = VendorFile("wheel", WHEEL, entry(vendor_dir / WHEEL))
    bundle = Bundle(tmp_path, "x86-cpu", {}, made, (vendor,))
    layout = Layout(root=tmp_path / "root", host_python=Path(sys.executable))
    actions = plan_venv(layout, load_profiles()["x86-cpu"], bundle, shell_for(layout))
    copies = {a.target.name: a.status for a in actions if a.kind == "wheel"}
    assert copies[WHEEL] == "create"
    [venv] = [a for a in actions if a.kind == "venv"]
    install = venv.commands[-1]
    assert install[-3:] == ("pip", "face-mirror[cpu]==0.1.0", "vendor-probe==1.0")
    assert "--no-index" in install
    assert json.loads(venv.data or b"")["wheels"][WHEEL] == vendor.file.sha256


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the x86-cpu profile")
def test_a_vendor_wheel_and_its_dependency_are_installed_into_the_real_venv(
    monkeypatch: pytest.MonkeyPatch, store: ModelStore, tmp_path: Path, vendor_dir: Path
) -> None:
    """End to end: the bundle's wheels for this machine (pip, from the index, cached as
    test_provision_venv caches them), then the device's venv made offline from them."""
    if not index_reachable():
        pytest.skip("the package index (pypi.org) cannot be reached: no wheels to bundle")
    PIP_CACHE.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("PIP_CACHE_DIR", str(PIP_CACHE))
    given = tmp_path / "given"
    given.mkdir()
    shutil.copyfile(vendor_dir / WHEEL, given / WHEEL)
    out = tmp_path / "bundle"
    args = ["provision", "bundle", str(out), "--from", str(store.cache_dir), "--with-wheels"]
    assert main([*args, "--profile", "x86-cpu", "--vendor", str(given)]) == 0
    wheels = {p.name for p in (out / "wheels").iterdir()}
    assert any(n.startswith("coloredlogs-") for n in wheels), "its dependency, for the target"
    assert WHEEL not in wheels, "carried once, in vendor/"
    root = tmp_path / "root"
    request = Request(root=root, bundle=out, profile="x86-cpu", host_python=Path(sys.executable))
    provision(request, progress=False)
    python = root / "opt/mirror/venv/bin/python"
    code = "import vendor_probe, coloredlogs; print(vendor_probe.VALUE)"
    done = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, timeout=120, check=False,
        cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "42", done.stderr
