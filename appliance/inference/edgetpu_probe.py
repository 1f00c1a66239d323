"""The Edge TPU's delegate and first invoke, tried in a child process before the mirror
trusts them.

libedgetpu 16.0 is built against an old TensorFlow Lite; newer LiteRT builds
are reported to segfault with it. A segfault is no exception: in the mirror's
own process it would end the service, and under ``Restart=on-failure`` it
would crash-loop. So the mirror's process never loads the delegate before a
child has: ``delegate_fails(library)`` runs this module as a child of the same
Python (``python -m appliance.inference.edgetpu_probe --library LIB``), which
loads the delegate (PyCoral: lists the TPUs) and so shows whether a TPU
answers; ``first_invoke_fails(variant)`` runs it with the model (``... MODEL
--library LIB``): the child also builds the interpreter for the ``_edgetpu``
model and invokes it once on zeros. A child killed by a signal, exiting
non-zero or running past the timeout gives the reason to fall back to the CPU
model; each answer is kept per process (per library, per model file), so each
child runs once.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 60.0
CPU_NOTE = "using the CPU model"
_STDERR_TAIL = 300

_lock = threading.Lock()
_results: dict[tuple[str, int, int, str], str | None] = {}  # (model, size, mtime, library)
_delegates: dict[str, str | None] = {}  # library -> why its delegate does not load


def probe_command() -> list[str]:
    """This module run by the same Python as the mirror."""
    return [sys.executable, "-m", __name__]


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][-_STDERR_TAIL:] if lines else "no message"


def _run_child(command: Sequence[str], timeout_s: float) -> str | None:
    try:
        done = subprocess.run(
            list(command),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:  # run() has killed and reaped the child
        return f"Edge TPU probe timed out after {timeout_s:g} s: {CPU_NOTE}"
    except OSError as exc:
        return f"Edge TPU probe could not start ({exc}): {CPU_NOTE}"
    if done.returncode < 0:
        name = _signal_name(-done.returncode)
        return f"Edge TPU probe crashed ({name}): {CPU_NOTE}"
    if done.returncode != 0:
        why = _last_line(done.stderr)
        return f"Edge TPU probe failed (exit {done.returncode}: {why}): {CPU_NOTE}"
    return None


def first_invoke_fails(
    variant: Path,
    library: str,
    *,
    command: Sequence[str] | None = None,
    timeout_s: float = PROBE_TIMEOUT_S,
) -> str | None:
    """None when a child loaded ``variant`` on the TPU and invoked it once; else why not.

    ``command`` replaces ``python -m appliance.inference.edgetpu_probe`` (tests
    inject a child that really crashes); the model path and ``--library LIB``
    follow it. The answer is kept for this process, per model file and library.
    """
    stat = variant.stat()
    key = (str(variant.resolve()), stat.st_size, stat.st_mtime_ns, library)
    with _lock:  # one child at a time, and only one per file
        if key not in _results:
            full = [*(command or probe_command()), str(variant), "--library", library]
            logger.info("Edge TPU: first invoke of %s in a child process", variant.name)
            _results[key] = _run_child(full, timeout_s)
        return _results[key]


def delegate_fails(
    library: str, *, command: Sequence[str] | None = None, timeout_s: float = PROBE_TIMEOUT_S
) -> str | None:
    """None when a child loaded the delegate from ``library`` (a TPU answered); else why not.

    ``command`` as for :func:`first_invoke_fails`; ``--library LIB`` follows it (no model).
    """
    with _lock:
        if library not in _delegates:
            full = [*(command or probe_command()), "--library", library]
            logger.info("Edge TPU: loading the delegate from %s in a child process", library)
            _delegates[library] = _run_child(full, timeout_s)
        return _delegates[library]


def forget_probes() -> None:
    """Drop the kept answers (tests; a replugged TPU)."""
    with _lock:
        _results.clear()
        _delegates.clear()


# ---- the child ---------------------------------------------------------------------------


def _no_core_dump() -> None:
    """A crash of the probe is expected: no core file in the service's working directory."""
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _interpreter(model: Path, library: str) -> Any:
    from appliance.inference.edgetpu import litert_delegate, pycoral_edgetpu

    pycoral = pycoral_edgetpu()
    if pycoral is not None:
        return pycoral.make_interpreter(str(model))
    from ai_edge_litert.interpreter import Interpreter

    delegate = litert_delegate(library)
    return Interpreter(model_path=str(model), experimental_delegates=[delegate])


def load_only(library: str) -> None:
    """Load the delegate (PyCoral: list the TPUs); raises when no TPU answers (may crash)."""
    from appliance.inference.edgetpu import litert_delegate, pycoral_edgetpu

    pycoral = pycoral_edgetpu()
    if pycoral is None:
        litert_delegate(library)
    elif not list(pycoral.list_edge_tpus()):
        raise RuntimeError("PyCoral finds no Edge TPU attached")


def invoke_once(model: Path, library: str) -> None:
    """Load the delegate, build the interpreter and invoke it on zeros (may crash the process)."""
    interpreter = _interpreter(model, library)
    interpreter.allocate_tensors()
    for detail in interpreter.get_input_details():
        shape = tuple(int(d) for d in detail["shape"])
        interpreter.set_tensor(int(detail["index"]), np.zeros(shape, detail["dtype"]))
    interpreter.invoke()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="edgetpu_probe", description=__doc__)
    parser.add_argument("model", type=Path, nargs="?", help="an _edgetpu model (none: load only)")
    parser.add_argument("--library", default="libedgetpu.so.1")
    args = parser.parse_args(argv)
    _no_core_dump()
    try:
        if args.model is None:
            load_only(args.library)
        else:
            invoke_once(args.model, args.library)
    except (ImportError, OSError, RuntimeError, ValueError) as exc:
        message = " ".join(str(exc).split())
        print(f"{type(exc).__name__}: {message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
