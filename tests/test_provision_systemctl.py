"""The systemctl service control waits for a new start, not the old process.

``systemctl restart --no-block`` only queues the restart: until systemd gets to
it, the old process is still ``active`` and still answers ``/healthz``. A fake
``systemctl`` on ``PATH`` simulates that (a state file: the running invocation,
and a restart that takes effect only on a later call); the real runner calls it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from provisioning.runner import run_subprocess
from provisioning.service import Systemctl

FAKE = """#!/bin/sh
# a systemd that applies a queued restart on the second query after it
state="$FAKE_SYSTEMD"
case "$1" in
  restart) echo 2 > "$state.queued"; exit 0 ;;
  is-active) exit 0 ;;
  show)
    if [ -f "$state.queued" ]; then
      left=$(cat "$state.queued")
      if [ "$left" -le 0 ]; then
        rm "$state.queued"; echo "new-$(date +%s%N)" > "$state"
      else
        echo $((left - 1)) > "$state.queued"
      fi
    fi
    cat "$state" ;;
esac
"""


def test_the_old_process_does_not_pass_for_the_restarted_one(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    systemctl = bin_dir / "systemctl"
    systemctl.write_text(FAKE)
    systemctl.chmod(systemctl.stat().st_mode | stat.S_IXUSR)
    state = tmp_path / "state"
    state.write_text("old-invocation\n")
    env = {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "FAKE_SYSTEMD": str(state),
    }
    service = Systemctl(run_subprocess, env)
    service.restart()  # queued: the old run is still active
    answers = [service.is_active() for _ in range(4)]
    assert answers[0] is False  # active, but still the run before the restart
    assert answers[-1] is True  # the new run, once systemd got to it
    assert state.read_text().startswith("new-")
