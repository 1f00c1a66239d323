"""A Jetson on JetPack 6, read against NVIDIA's and Ubuntu's real packages.

The Jetson's venv keeps numpy below 2 (JetPack's cv2 is built against Ubuntu 22.04's
numpy 1.21), runs on LiteRT when NVIDIA's onnxruntime-gpu is missing, and `mirror
doctor` names each missing NVIDIA part with the wheel for the JetPack it reads from
``/etc/nv_tegra_release``. The device is a faked root (the files a Jetson shows); the
Python checked is this test run's own, which like a fresh Jetson venv has neither
onnxruntime-gpu nor tensorrt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.version import Version

from appliance.cli.main import main
from appliance.device.catalog import load_profiles
from appliance.device.jetpack import onnxruntime_source, parse_release
from appliance.doctor.doctor import DoctorProbes, run_doctor
from appliance.doctor.numpy_abi import mismatch
from appliance.doctor.text import render_text
from appliance.doctor.vendor_check import VendorInputs
from appliance.errors import BackendFallbackWarning
from appliance.modelstore import ModelStore
from provisioning import requirements, targets
from tests.test_hardware import FakeDevice, fake_probe
from tests.wheels import build_wheel, index_reachable

ORIN = "NVIDIA Jetson Orin Nano Developer Kit"
JP60 = "# R36 (release), REVISION: 3.0, GCID: 36923193, BOARD: generic, EABI: aarch64"
JP62 = "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64"
JP5 = "# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64"
JETSON_MARKERS = {"platform_machine": "aarch64", "platform_release": "5.15.148-tegra"}
REPO = Path(__file__).resolve().parent.parent


def orin(root: Path, release: str = JP62) -> FakeDevice:
    return FakeDevice(root).base("aarch64", 6).model(ORIN).tegra(release)


def jetson_doctor(root: Path, store: ModelStore, vendor: VendorInputs | None = None) -> str:
    """The doctor as on the Jetson itself (live: this Python), on the faked device."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendFallbackWarning)
        probes = DoctorProbes(prober=fake_probe, live=True, vendor=vendor)
        report = run_doctor(root, load_profiles(), store, probes=probes)
    return render_text(report)


# ---- numpy below 2 ------------------------------------------------------------------------


def test_the_jetson_extra_keeps_numpy_below_2_for_jetpacks_cv2() -> None:
    env = {**default_environment(), **JETSON_MARKERS, "python_version": "3.10"}
    specs = [
        req.specifier
        for req in map(Requirement, metadata.requires("face-mirror") or [])
        if req.name == "numpy"
        and req.marker is not None
        and req.marker.evaluate({**env, "extra": "jetson"})
    ]
    assert specs and all(not s.contains("2.0") for s in specs), specs
    assert any(s.contains("1.26.4") for s in specs), "numpy 1.26 (cp310 aarch64 wheels) fits"
    # what the bundle asks pip for, for the jetpack6 target (markers evaluated for it)
    reqs = requirements.for_target(
        metadata.requires("face-mirror") or [], ["jetson", "display"], targets.named("jetpack6")
    )
    assert "numpy<2,>=1.24" in reqs
    assert not any(r.startswith("opencv") for r in reqs)


def test_pip_resolves_numpy_1_for_the_jetpack6_bundle(tmp_path: Path) -> None:
    """pip itself, for JetPack 6's Python 3.10 and glibc 2.35 on aarch64, from this
    checkout's wheel: numpy 1.x, no opencv (pip's would shadow JetPack's)."""
    if not index_reachable():
        pytest.skip("the package index (pypi.org) cannot be reached")
    wheel = build_wheel(tmp_path / "dist")
    target = targets.named("jetpack6")
    dist = requirements.of_wheel(wheel)
    reqs = requirements.for_target(dist.requires or [], ["jetson", "display"], target)
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q"]
    cmd += ["--disable-pip-version-check", "--report", str(tmp_path / "report.json")]
    cmd += ["--target", str(tmp_path / "t"), "--only-binary=:all:", "--implementation", "cp"]
    cmd += ["--python-version", target.python]
    for tag in targets.platform_tags(target):
        cmd += ["--platform", tag]
    done = subprocess.run([*cmd, *reqs], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    got = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in report["install"]}
    assert Version(got["numpy"]).major == 1, got["numpy"]
    assert not any(name.startswith("opencv") for name in got)
    assert "ai-edge-litert" in got and "pygame-ce" in got


# ---- numpy 2 against the OS's cv2: one line, before anything imports cv2 -------------------


def _os_site(root: Path, numpy: str) -> Path:
    """An OS site folder as Ubuntu lays it out: its cv2 and its numpy's metadata."""
    site = root / "usr" / "lib" / "python3" / "dist-packages"
    (site / "cv2").mkdir(parents=True)
    # what a cv2 built for numpy 1 does under numpy 2 (numpy prints pages before it)
    (site / "cv2" / "__init__.py").write_text(
        "raise ImportError('numpy.core.multiarray failed to import')\n"
    )
    info = site / f"numpy-{numpy}.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text(f"Metadata-Version: 1.2\nName: numpy\nVersion: {numpy}\n")
    return site


def _venv_site(root: Path, numpy: str, opencv: str | None = None) -> Path:
    site = root / "venv" / "site-packages"
    (site / "numpy").mkdir(parents=True)
    (site / "numpy" / "__init__.py").write_text("")
    for name, version in (("numpy", numpy), ("opencv_python_headless", opencv)):
        if version is not None:
            info = site / f"{name}-{version}.dist-info"
            info.mkdir()
            dist = name.replace("_", "-")
            (info / "METADATA").write_text(
                f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
            )
    if opencv is not None:
        (site / "cv2").mkdir()
        (site / "cv2" / "__init__.py").write_text("")
    return site


def test_numpy_2_against_the_os_cv2_is_named_with_its_fix(tmp_path: Path) -> None:
    os_site = _os_site(tmp_path, "1.21.5")
    venv = _venv_site(tmp_path, "2.2.6")
    line = mismatch([str(venv), str(os_site)], python="/opt/mirror/venv/bin/python")
    assert line is not None
    assert line.startswith(f"numpy 2.2.6 (in {venv}) cannot run the OS's cv2 ({os_site}/cv2)")
    assert "built for the OS's numpy 1.21.5" in line
    assert "/opt/mirror/venv/bin/python -m pip install 'numpy>=1.24,<2'" in line
    # numpy 1.26 in the venv runs a cv2 built for 1.21; pip's own opencv is built for numpy 2
    assert mismatch([str(_venv_site(tmp_path / "a", "1.26.4")), str(os_site)]) is None
    assert mismatch([str(_venv_site(tmp_path / "b", "2.2.6", "4.11.0.86")), str(os_site)]) is None
    # Debian 13's cv2 is built for its numpy 2
    assert mismatch([str(venv), str(_os_site(tmp_path / "c", "2.2.4"))]) is None


def test_mirror_with_numpy_2_and_jetpacks_cv2_says_so_in_one_line(tmp_path: Path) -> None:
    """The real command in a Python whose cv2 is the OS's, built for numpy 1: one line and
    the status the unit does not restart on, no traceback, for every command."""
    os_site = _os_site(tmp_path, "1.21.5")
    env = {"PYTHONPATH": f"{REPO}:{os_site}", "PATH": "/usr/bin:/bin"}
    for args in (["doctor"], ["run", "--frames", "1"]):
        done = subprocess.run(
            [sys.executable, "-m", "appliance.cli.main", *args],
            capture_output=True, text=True, timeout=120, check=False, env=env,
        )  # fmt: skip
        assert done.returncode == 78, done.stderr
        assert done.stdout == "" and "Traceback" not in done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("mirror: error: numpy ")
        assert "'numpy>=1.24,<2'" in done.stderr


# ---- JetPack releases ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "jetpack", "index"),
    [
        (
            "# R36 (release), REVISION: 2.0, GCID: 35084178",
            "JetPack 6.0 (developer preview)",
            "Zoo",
        ),
        (JP60, "JetPack 6.0 (L4T R36.3.0)", "Jetson Zoo"),
        ("# R36 (release), REVISION: 4.0, GCID: 37537400", "JetPack 6.1 (L4T R36.4.0)", "cu126"),
        (JP62, "JetPack 6.2 (L4T R36.4.3)", "jp6/cu126"),
    ],
)
def test_the_jetpack_and_its_onnxruntime_wheel_come_from_nv_tegra_release(
    line: str, jetpack: str, index: str
) -> None:
    release = parse_release(line)
    assert release is not None and jetpack in release.describe()
    assert index in onnxruntime_source(release)
    assert parse_release("garbage") is None


def test_a_jetson_without_nvidias_parts_is_told_each_and_what_runs_instead(
    store: ModelStore, tmp_path: Path
) -> None:
    text = jetson_doctor(orin(tmp_path).root, store)
    assert "mirror doctor: the mirror can run here" in text
    assert "install   extras jetson, display: incomplete (see the warnings)" in text
    ort = metadata.version("onnxruntime")
    assert (
        f"warning   onnxruntime {ort} is PyPI's CPU build (no CUDA or TensorRT): uninstall it; "
        "tensorrt, cuda need NVIDIA's onnxruntime-gpu for JetPack 6.2 (L4T R36.4.3): NVIDIA's "
        "onnxruntime-gpu wheel for CUDA 12.6, cp310 linux_aarch64, from the Jetson AI Lab "
        "package index (jp6/cu126): bring it with `mirror provision bundle --vendor DIR` and "
        "provision again; the mirror runs on onnx-cpu instead"
    ) in text
    assert "warning   tensorrt is not importable: TensorRT's Python bindings are JetPack's " in text
    assert "python3-libnvinfer" in text


def test_a_jetpack_60_venv_with_no_onnxruntime_names_the_zoo_wheel_and_runs_litert(
    store: ModelStore, tmp_path: Path
) -> None:
    # the Jetson's own venv: no onnxruntime at all (nothing from pip brings one)
    nothing = VendorInputs(version_of=lambda _name: None, importable=lambda _name: False)
    blocked = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['onnxruntime'] = None; "
         "from appliance.inference.select import choose_backend; "
         "print(choose_backend(['tensorrt', 'cuda', 'onnx-cpu', 'litert-cpu'])[1][-1].name)"],
        capture_output=True, text=True, timeout=120, check=False, cwd=REPO,
    )  # fmt: skip
    assert blocked.returncode == 0 and blocked.stdout.strip() == "litert-cpu", blocked.stderr
    text = jetson_doctor(orin(tmp_path, JP60).root, store, nothing)
    assert (
        "onnxruntime-gpu is not installed: tensorrt, cuda need NVIDIA's build for JetPack 6.0 "
        "(L4T R36.3.0): NVIDIA's onnxruntime-gpu wheel for JetPack 6.0 (CUDA 12.2)"
    ) in text
    assert "the Jetson Zoo's ONNX Runtime table" in text


def test_an_onnxruntime_gpu_without_the_gpu_providers_is_not_nvidias(
    store: ModelStore, tmp_path: Path
) -> None:
    cpu_only = VendorInputs(
        version_of={"onnxruntime-gpu": "1.23.0"}.get,
        providers=lambda: ["CPUExecutionProvider"],
        importable=lambda _name: True,
    )
    text = jetson_doctor(orin(tmp_path).root, store, cpu_only)
    assert (
        "onnxruntime-gpu 1.23.0 has neither TensorrtExecutionProvider nor "
        "CUDAExecutionProvider (it has CPUExecutionProvider): not NVIDIA's build"
    ) in text
    assert "tensorrt is not importable" not in text


def test_mirror_run_on_a_jetson_venv_without_onnxruntime_runs_on_litert(tmp_path: Path) -> None:
    """No onnxruntime at all (the Jetson venv before NVIDIA's wheel): the mirror runs."""
    code = (
        "import sys; sys.modules['onnxruntime'] = None; "
        "from appliance.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    args = ["run", "--profile", "jetson-orin-nano", "--frames", "3", "--no-web", "--no-preview"]
    done = subprocess.run(
        [sys.executable, "-c", code, *args, "--status-every", "0"],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "backend     litert-cpu: LiteRT on the CPU" in done.stderr
    assert "skipped   onnx-cpu: onnxruntime is not installed" in done.stderr


# ---- JetPack 5 and the Xavier NX: recognised, refused in one line ---------------------------


def test_xavier_nx_is_refused_by_doctor_with_the_reason(
    capsys: pytest.CaptureFixture[str], store: ModelStore, tmp_path: Path
) -> None:
    FakeDevice(tmp_path).base("aarch64").model("NVIDIA Jetson Xavier NX Developer Kit").tegra(JP5)
    code = main(["doctor", "--root", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1
    assert "profile   jetson-xavier-nx:" in out
    assert err.count("\n") == 1
    assert err.startswith(
        "mirror: error: the mirror cannot run here: profile jetson-xavier-nx is not supported: "
        "the Xavier NX runs at most JetPack 5 (L4T R35: Ubuntu 20.04, Python 3.8"
    )


def test_an_orin_on_jetpack_5_is_refused_and_run_does_not_restart(
    store: ModelStore, tmp_path: Path
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendFallbackWarning)
        report = run_doctor(
            orin(tmp_path, JP5).root, load_profiles(), store,
            probes=DoctorProbes(prober=fake_probe, live=False),
        )  # fmt: skip
    assert not report.ok
    assert report.problems[0] == (
        "profile jetson-orin-nano cannot run here: JetPack 5 (L4T R35.4.1) ships Python 3.8, "
        "and the mirror needs Python 3.10 or newer: flash JetPack 6 (L4T R36), which runs on "
        "the Orin modules"
    )


def test_run_bundle_and_provision_refuse_the_xavier_in_one_line(
    capsys: pytest.CaptureFixture[str], store: ModelStore, tmp_path: Path
) -> None:
    code = main(["run", "--profile", "jetson-xavier-nx", "--frames", "1", "--no-web"])
    _, err = capsys.readouterr()
    assert code == 78  # the unit's RestartPreventExitStatus: no restart every 2 s
    assert err.count("\n") == 1
    assert err.startswith("mirror: error: profile jetson-xavier-nx is not supported: ")
    out = tmp_path / "bundle"
    args = ["provision", "bundle", str(out), "--from", str(store.cache_dir)]
    assert main([*args, "--profile", "jetson-xavier-nx"]) == 1
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and "jetson-xavier-nx is not supported" in err
    assert not out.exists(), "nothing was written"
    bundle = tmp_path / "ok-bundle"
    assert main(["provision", "bundle", str(bundle), "--from", str(store.cache_dir)]) == 0
    root = tmp_path / "root"
    FakeDevice(root).base("aarch64").model("NVIDIA Jetson Xavier NX Developer Kit").tegra(JP5)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    capsys.readouterr()
    assert main(["provision", "--bundle", str(bundle), "--root", str(root)]) == 1
    _, err = capsys.readouterr()  # the bundle's check (progress), then one line
    [line] = [line for line in err.splitlines() if not line.startswith("verifying ")]
    assert line.startswith("mirror: error: profile jetson-xavier-nx is not supported: ")
    assert line.endswith("; nothing was written")
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_the_unit_does_not_restart_on_a_device_the_mirror_cannot_run_on(tmp_path: Path) -> None:
    from provisioning.layout import Layout
    from provisioning.units import render_unit

    unit = render_unit(load_profiles()["jetson-orin-nano"], Layout(root=tmp_path))
    assert "RestartPreventExitStatus=78\n" in unit
