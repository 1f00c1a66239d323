"""Entry point of the ``mirror`` command: argument parsing and error reporting.

Every expected failure is a :class:`MirrorError`; it is printed as one line
on stderr and the process exits non-zero, never with a traceback. An
``OSError`` no command turned into one (a file system's refusal) is printed
the same way (its traceback with ``-vv``).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from appliance.cli import models_cmd
from appliance.doctor.numpy_abi import mismatch as numpy_mismatch
from appliance.errors import EXIT_NOT_RUNNABLE, MirrorError, NotRunnableError
from appliance.log_text import SafeFormatter

logger = logging.getLogger(__name__)

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130
# How long a thread may hold Python's lock (the GIL) while another waits for it (Python's
# default: 5 ms). The process thread holds it between many small calls, so the capture,
# face and detection threads waited up to that long. Against 5 ms in six interleaved
# `mirror bench` rounds on two CPUs, 1 ms gave three tiled 640x480 faces a lower e2e p95
# in four (26.0-31.7 against 33.8-39.3 ms; higher in two, 38.1-39.3 against 33.5-38.2)
# and one 1280x720 face a lower one in four (equal in one, higher in one).
SWITCH_INTERVAL_S = 0.001


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mirror", description="Face-swap mirror appliance")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    models_cmd.register(sub)
    _register_optional(sub)
    return parser


def _register_optional(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Sub-commands that live in their own modules."""
    from appliance.cli import (
        bench_cmd,
        doctor_cmd,
        eval_cmd,
        identity_cmd,
        image_cmd,
        metrics_token_cmd,
        provision_cmd,
        run_cmd,
        swap_cmd,
        update_cmd,
    )

    swap_cmd.register(sub)
    run_cmd.register(sub)
    bench_cmd.register(sub)
    eval_cmd.register(sub)
    doctor_cmd.register(sub)
    provision_cmd.register(sub)
    image_cmd.register(sub)
    update_cmd.register(sub)
    identity_cmd.register(sub)
    metrics_token_cmd.register(sub)


def _configure_logging(verbosity: int) -> None:
    """Records on stderr (the journal under systemd), one line each: control characters in
    them (a request path's ``%0A``) are escaped, so no value can forge a line."""
    level = logging.WARNING - 10 * min(verbosity, 2)
    handler = logging.StreamHandler()
    handler.setFormatter(SafeFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])


def _parser_or_why() -> argparse.ArgumentParser | str:
    """The parser, or why this install cannot import what every command needs (cv2, numpy).

    A numpy 2 that the OS's cv2 cannot run is told before cv2 is imported (numpy would
    print pages first); any other failed import of the commands is one line too.
    """
    broken = numpy_mismatch()
    if broken is not None:
        return broken
    try:
        return build_parser()
    except ImportError as exc:
        return (
            f"cannot start: {' '.join(str(exc).split())}; this Python lacks what the mirror "
            "imports: install it as the README's installer path for this device says"
        )


def os_error_text(exc: OSError) -> str:
    """``FILE: reason`` for an ``OSError``, on one line."""
    reason = exc.strerror or " ".join(str(exc).split())
    return f"{exc.filename}: {reason}" if exc.filename is not None else reason


def main(argv: Sequence[str] | None = None) -> int:
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    parser = _parser_or_why()
    if isinstance(parser, str):
        print(f"mirror: error: {parser}", file=sys.stderr)
        return EXIT_NOT_RUNNABLE
    args = parser.parse_args(argv)
    _configure_logging(args.verbose)
    try:
        return int(args.handler(args) or 0)
    except NotRunnableError as exc:
        print(f"mirror: error: {exc}", file=sys.stderr)
        return EXIT_NOT_RUNNABLE
    except MirrorError as exc:
        print(f"mirror: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:  # a file system's refusal no command foresaw (a name too long...)
        logger.debug("unexpected OSError", exc_info=True)
        print(f"mirror: error: {os_error_text(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("mirror: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
