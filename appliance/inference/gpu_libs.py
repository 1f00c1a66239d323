"""The CUDA, cuDNN and TensorRT libraries onnxruntime-gpu needs, made findable before sessions.

onnxruntime-gpu's provider libraries (``onnxruntime/capi/libonnxruntime_providers_cuda.so``
and ``..._tensorrt.so``) name CUDA 12, cuDNN 9 and TensorRT 10 by soname
(``libcublasLt.so.12``, ``libcudnn.so.9``, ``libnvinfer.so.10``) and carry no RUNPATH, so
the dynamic loader looks only in its own path, and finds a library already loaded in the
process by its soname. The ``gpu`` extra brings CUDA and cuDNN as NVIDIA's wheels
(``site-packages/nvidia/*/lib``), where the loader never looks: ``onnxruntime.preload_dlls()``
(onnxruntime 1.21 on) loads them by path first. Without it onnxruntime drops the CUDA
provider with only a log line.

TensorRT has no wheel on PyPI (``tensorrt-cu12-libs`` there is an sdist that fetches the
libraries from pypi.nvidia.com when it is built), so it comes from NVIDIA's
``tensorrt_libs`` package when an installer adds it (importing it loads its libraries by
path) or from the system's library path (NVIDIA's ``libnvinfer10`` packages).

:func:`prepare` does both once per process and says what it found; each reason names
the library that is missing, so a fallback says why. :func:`cuda_driver_problem` asks the
driver itself (``libcuda.so.1``, ``cuInit``, ``cuDeviceGetCount``).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import importlib.util
import io
import logging
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

# What the pinned onnxruntime-gpu's TensorRT provider needs (readelf -d: NEEDED).
TENSORRT_SONAMES = ("libnvinfer.so.10", "libnvonnxparser.so.10")
TENSORRT_PACKAGE = "tensorrt_libs"  # NVIDIA's tensorrt-cu12-libs wheel (pypi.nvidia.com)
CUDA_DRIVER = "libcuda.so.1"
_FAILED = re.compile(r"^Failed to load (\S+?):? (.*)$")
_NO_DEVICE = 100  # CUresult CUDA_ERROR_NO_DEVICE


@dataclass(frozen=True)
class GpuLibraries:
    """What :func:`prepare` found: CUDA/cuDNN preloaded or why not, TensorRT or why not."""

    cuda_ready: bool
    cuda_note: str
    tensorrt: str | None  # where libnvinfer was loaded from; None: not found
    tensorrt_note: str
    tensorrt_version: str | None


_lock = threading.Lock()
_prepared: GpuLibraries | None = None


def _onnxruntime() -> Any | None:
    from appliance.inference.onnx_backend import onnxruntime_module  # the one that opens it

    return onnxruntime_module()


def prepare() -> GpuLibraries:
    """Preload CUDA/cuDNN from NVIDIA's wheels and load TensorRT, once per process."""
    global _prepared  # noqa: PLW0603 - one per process, like the loader's own state
    with _lock:
        if _prepared is None:
            cuda_ready, cuda_note = _preload_cuda(_onnxruntime())
            trt, trt_note = _load_tensorrt()
            _prepared = GpuLibraries(
                cuda_ready, cuda_note, trt, trt_note, tensorrt_version() if trt else None
            )
            logger.info(
                "GPU libraries: CUDA/cuDNN %s; TensorRT %s",
                cuda_note,
                f"{_prepared.tensorrt_version} from {trt}" if trt else trt_note,
            )
        return _prepared


def forget() -> None:
    """Prepare again at the next call (tests)."""
    global _prepared  # noqa: PLW0603
    with _lock:
        _prepared = None


def _preload_cuda(ort: Any | None) -> tuple[bool, str]:
    if ort is None:
        return False, "onnxruntime is not installed"
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return False, f"this onnxruntime ({ort.__version__}) has no CUDA provider"
    preload = getattr(ort, "preload_dlls", None)
    if preload is None:  # onnxruntime before 1.21
        return False, (
            f"onnxruntime {ort.__version__} has no preload_dlls(): CUDA and cuDNN must be on "
            "the loader's path"
        )
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):  # it prints its failures
            preload(cuda=True, cudnn=True, msvc=False)
    except (OSError, RuntimeError) as exc:
        return False, f"onnxruntime.preload_dlls() failed: {exc}"
    failed = [m.group(1) for line in printed.getvalue().splitlines() if (m := _FAILED.match(line))]
    if failed:
        return False, f"not found: {', '.join(failed)} (the gpu extra's nvidia-* wheels)"
    return True, "loaded (onnxruntime.preload_dlls)"


def is_loaded(soname: str) -> bool:
    """Whether a library of this soname is in the process already (``RTLD_NOLOAD``)."""
    try:
        ctypes.CDLL(soname, mode=os.RTLD_NOLOAD)
    except OSError:
        return False
    return True


def _load_tensorrt() -> tuple[str | None, str]:
    first = TENSORRT_SONAMES[0]
    if is_loaded(first):
        return "this process", "already loaded"
    package = _tensorrt_package()
    if package is not None and is_loaded(first):
        return str(package), "from NVIDIA's tensorrt_libs wheel"
    errors: list[str] = []
    for soname in TENSORRT_SONAMES:  # the system's (NVIDIA's libnvinfer10 packages)
        try:
            ctypes.CDLL(soname)
        except OSError as exc:
            errors.append(str(exc))
    if not errors:
        return "the system's library path", "from the system"
    logger.debug("TensorRT not loaded: %s", "; ".join(errors))
    return None, (
        f"{first} not found: TensorRT 10 for CUDA 12 is installed neither system-wide nor as "
        "NVIDIA's tensorrt-cu12-libs wheel (PyPI does not carry it)"
    )


def _tensorrt_package() -> Path | None:
    """Import NVIDIA's ``tensorrt_libs`` (it loads its libraries); load them by path if not."""
    spec = importlib.util.find_spec(TENSORRT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    try:
        importlib.import_module(TENSORRT_PACKAGE)
    except (ImportError, OSError) as exc:
        logger.warning("importing %s failed: %s", TENSORRT_PACKAGE, exc)
    if not is_loaded(TENSORRT_SONAMES[0]):
        for library in sorted(folder.glob("lib*.so*"), key=_load_order):
            with contextlib.suppress(OSError):
                ctypes.CDLL(str(library))
    return folder


def _load_order(path: Path) -> tuple[int, str]:
    """libnvinfer first, then its plugins and the parser that need it."""
    return (0 if path.name.startswith("libnvinfer.so") else 1, path.name)


def decode_version(value: int) -> str:
    """``getInferLibVersion()``: major*10000+minor*100+patch from TensorRT 10 (*1000 before)."""
    if value >= 100000:
        return f"{value // 10000}.{value // 100 % 100}.{value % 100}"
    return f"{value // 1000}.{value // 100 % 10}.{value % 100}"


def tensorrt_version() -> str | None:
    """The loaded TensorRT's own version (``getInferLibVersion``), else the Python package's."""
    if is_loaded(TENSORRT_SONAMES[0]):
        with contextlib.suppress(OSError, AttributeError):
            library = ctypes.CDLL(TENSORRT_SONAMES[0], mode=os.RTLD_NOLOAD)
            function = library.getInferLibVersion
            function.restype = ctypes.c_int32
            return decode_version(int(function()))
    with contextlib.suppress(ImportError):
        import tensorrt

        return str(tensorrt.__version__)
    return None


def provider_load_error(short: str) -> str | None:
    """Why onnxruntime cannot load its ``libonnxruntime_providers_<short>.so`` (the loader's
    message names the missing library); None when it loads or this build has no such file."""
    ort = _onnxruntime()
    if ort is None:
        return None
    library = Path(ort.__file__).parent / "capi" / f"libonnxruntime_providers_{short}.so"
    if not library.is_file():
        return None
    try:
        ctypes.CDLL(str(library))
    except OSError as exc:
        return str(exc).replace(f"{library}: ", "")
    return None


def cuda_driver_problem() -> str | None:
    """Why the CUDA driver cannot run anything here (no driver, no device), or None."""
    try:
        driver = ctypes.CDLL(CUDA_DRIVER)
    except OSError:
        return f"no NVIDIA driver: {CUDA_DRIVER} not found"
    result = int(driver.cuInit(0))
    if result != 0:
        text = "no CUDA-capable device" if result == _NO_DEVICE else _error_name(driver, result)
        return f"the NVIDIA driver has no usable GPU: cuInit error {result} ({text})"
    count = ctypes.c_int(0)
    if int(driver.cuDeviceGetCount(ctypes.byref(count))) != 0 or count.value < 1:
        return "the NVIDIA driver sees no CUDA device"
    return None


def _error_name(driver: ctypes.CDLL, result: int) -> str:
    text = ctypes.c_char_p()
    try:
        if int(driver.cuGetErrorString(result, ctypes.byref(text))) == 0 and text.value:
            return text.value.decode(errors="replace")
    except AttributeError:
        pass
    return "see the driver's documentation"
