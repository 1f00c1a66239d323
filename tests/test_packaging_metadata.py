"""What the installed distribution asks pip for, per target (its requirement markers).

Read from the metadata pip itself resolves (``importlib.metadata``), evaluated for
each kind of device with :mod:`packaging.markers`.
"""

from __future__ import annotations

from importlib import metadata

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

JETSON = {"platform_machine": "aarch64", "platform_release": "5.15.148-tegra"}
PI_DEBIAN12 = {"platform_machine": "aarch64", "python_version": "3.11"}
PI_DEBIAN13 = {"platform_machine": "aarch64", "python_version": "3.13"}
X86 = {"platform_machine": "x86_64", "platform_release": "6.1.0-28-amd64"}


def names(extra: str, **where: str) -> set[str]:
    """The distributions pip installs for ``face-mirror[extra]`` on a device like ``where``."""
    env = {**default_environment(), **where}
    chosen = set()
    for text in metadata.requires("face-mirror") or []:
        req = Requirement(text)
        if req.marker is None or any(req.marker.evaluate({**env, "extra": e}) for e in ("", extra)):
            chosen.add(req.name.lower())
    return chosen


def pinned(extra: str, name: str, **where: str) -> list[str]:
    env = {**default_environment(), **where}
    return [
        str(req.specifier)
        for req in map(Requirement, metadata.requires("face-mirror") or [])
        if req.name.lower() == name
        and (req.marker is None or req.marker.evaluate({**env, "extra": extra}))
    ]


def test_no_onnxruntime_in_the_base_so_the_gpu_build_is_never_shadowed() -> None:
    assert "onnxruntime" not in names("")
    assert "onnxruntime" in names("cpu")
    gpu = names("gpu")
    assert "onnxruntime-gpu" in gpu and "onnxruntime" not in gpu


def test_the_screen_uses_pygame_ce_whose_aarch64_wheels_have_kmsdrm() -> None:
    for extra in ("pi", "display"):
        wanted = names(extra, **PI_DEBIAN12)
        assert "pygame-ce" in wanted and "pygame" not in wanted, extra


def test_pi_gets_lgpio_and_numpy_1_on_debian_12_only() -> None:
    assert "lgpio" in names("pi", **PI_DEBIAN12)
    assert any("<2" in spec for spec in pinned("pi", "numpy", **PI_DEBIAN12))
    # Debian 13: numpy 2 (its picamera2 is built for it), lgpio from Debian (no cp313 wheel)
    assert not any("<2" in spec for spec in pinned("pi", "numpy", **PI_DEBIAN13))
    assert "lgpio" not in names("pi", **PI_DEBIAN13)


def test_jetson_never_gets_pip_opencv_which_would_shadow_jetpacks() -> None:
    assert "opencv-python-headless" not in names("jetson", **JETSON)
    assert "opencv-python-headless" in names("cpu", **X86)


def test_python_310_to_313_are_accepted() -> None:
    requires = metadata.metadata("face-mirror")["Requires-Python"]
    for version in ("3.10", "3.11", "3.12", "3.13"):
        assert SpecifierSet(requires).contains(version), (requires, version)
