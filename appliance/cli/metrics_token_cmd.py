"""``mirror metrics-token [--rotate]``: the ``/metrics`` scrape token, for a Prometheus config.

Prints the device's token (made at the admin page's first start, or here when there is
none yet) on stdout, alone, so ``mirror metrics-token > token`` makes a Prometheus
``credentials_file``; ``--rotate`` replaces it (the old one stops working at once, no
restart needed). Run it as the service's user with its data folder (the README says how).
"""

from __future__ import annotations

import argparse
import sys

from appliance.errors import OutputError
from appliance.paths import web_dir
from web_ui.scrape_token import TOKEN_NAME, load_or_create_token, rotate_token


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("metrics-token", help="print (or --rotate) the /metrics scrape token")
    parser.add_argument(
        "--rotate", action="store_true", help="make a new token; the old one stops working"
    )
    parser.set_defaults(handler=_metrics_token)


def _metrics_token(args: argparse.Namespace) -> int:
    path = web_dir() / TOKEN_NAME
    try:
        token = rotate_token(path) if args.rotate else load_or_create_token(path)
    except OutputError:
        raise
    except OSError as exc:  # stat, chmod, chown
        raise OutputError(f"cannot use {path}: {exc.strerror or exc}") from exc
    if args.rotate:
        print(f"mirror: new metrics scrape token in {path}", file=sys.stderr)
    print(token)
    return 0
