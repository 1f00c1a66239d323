"""A stand-in for the device's ``rauc`` (this machine has no A/B image): a script put first
on PATH that answers ``rauc status --detailed --output-format=json`` as RAUC 1.8 does on
a mirror booted from slot A, with slot B as flashed and marked bad. Each call is counted
in ``rauc-calls`` beside it; ``rauc-status.json`` beside it is what it prints (tests may
change it); while ``rauc-hold`` exists beside it, it does not answer. Any other command
fails, as an unexpected call should.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

RAUC_STATUS: dict[str, Any] = {
    "compatible": "face-mirror-rpi4",
    "booted": "A",
    "boot_primary": "rootfs.0",
    "slots": [
        {
            "rootfs.0": {
                "class": "rootfs",
                "device": "/dev/mmcblk0p5",
                "type": "ext4",
                "bootname": "A",
                "state": "booted",
                "boot_status": "good",
                "slot_status": {
                    "bundle": {"compatible": "face-mirror-rpi4", "version": "1.4.0"},
                    "installed": {"timestamp": "2026-12-05T10:00:00Z"},
                },
            }
        },
        {
            "boot.0": {
                "class": "boot",
                "device": "/dev/mmcblk0p2",
                "type": "vfat",
                "state": "booted",
                "parent": "rootfs.0",
            }
        },
        {
            "rootfs.1": {
                "class": "rootfs",
                "device": "/dev/mmcblk0p6",
                "type": "ext4",
                "bootname": "B",
                "state": "inactive",
                "boot_status": "bad",
                "slot_status": {},
            }
        },
    ],
}

SCRIPT = """#!/bin/sh
here=$(dirname "$0")
echo "$*" >> "$here/rauc-calls"
while [ -e "$here/rauc-hold" ]; do sleep 0.05; done  # a RAUC slow to answer, until let go
if [ "$*" != "status --detailed --output-format=json" ]; then
    echo "rauc (fake): unexpected arguments: $*" >&2
    exit 1
fi
exec cat "$here/rauc-status.json"
"""


def install_fake_rauc(folder: Path, status: dict[str, Any] | None = None) -> Path:
    """The fake ``rauc`` in ``folder`` (made); returns the folder, to put first on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "rauc"
    script.write_text(SCRIPT, encoding="ascii")
    script.chmod(0o755)
    set_rauc_status(folder, RAUC_STATUS if status is None else status)
    return folder


def set_rauc_status(folder: Path, status: dict[str, Any]) -> None:
    (folder / "rauc-status.json").write_text(json.dumps(status) + "\n", encoding="utf-8")


def rauc_calls(folder: Path) -> list[str]:
    calls = folder / "rauc-calls"
    return calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []


def path_with(folder: Path) -> str:
    """PATH with ``folder`` first."""
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"
