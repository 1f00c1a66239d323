"""`mirror run` as a service: SIGTERM stops it cleanly with a summary; status lines."""

from __future__ import annotations

import signal
import subprocess
import sys

MIRROR = [sys.executable, "-m", "appliance.cli.main"]


def test_sigterm_stops_the_mirror_cleanly_with_a_summary() -> None:
    proc = subprocess.Popen(
        [*MIRROR, "run", "--port", "0", "--status-every", "0.5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert "preview at http://127.0.0.1:" in proc.stdout.readline()
        status = proc.stdout.readline()
        assert "fps in" in status and "full quality" in status, status
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "ended: stop requested" in out, out
    assert "Traceback" not in err
