"""Run inside a network namespace of its own (``unshare -rn``): one IPv6 /64 on its loopback,
the admin page on one address of it, logins from others (this module holds no tests).

``python -m tests.ipv6_lockout_probe DATA_DIR`` prints one JSON object: the status of each
step (tests/test_web_lockout_abuse.py runs it and checks them).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.login_visitor import Visitor
from tests.test_web_support import FakeClock, build_app, build_mirror
from web_ui.ratelimit import LoginLimiter
from web_ui.server import serve

LAN = "2001:db8:1:2::"


def _own(hosts: tuple[str, ...]) -> None:
    """Loopback up, with these addresses of the /64 on it."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True, capture_output=True)
    for host in hosts:
        add = ["ip", "-6", "addr", "add", f"{LAN}{host}/64", "dev", "lo", "nodad"]
        subprocess.run(add, check=True, capture_output=True)


def main(base: Path) -> dict[str, object]:
    _own(("1", "66", "20"))
    mirror = build_mirror(base)
    app = build_app(mirror, limiter=LoginLimiter(clock=FakeClock()))
    server = serve(app, f"{LAN}1", 0)
    try:
        host = Visitor(server, f"{LAN}66")
        wrong = [host.login("guess") for _ in range(5)]
        return {
            "wrong": wrong,
            "same_host_right": host.login(),
            "other_host_right": Visitor(server, f"{LAN}20").login(),
        }
    finally:
        server.stop()
        mirror.control.close()


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))), flush=True)
