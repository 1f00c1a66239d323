"""The ``rauc`` command: a bundle's signature and contents, the slots' status, an install.

Everything about bundles and slots is RAUC's; this module runs its command line and
turns its answers into values and its failures into one :class:`UpdateError` line.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from appliance.updates.slots import rauc_path
from provisioning.errors import UpdateError
from provisioning.image.rauc_files import COMPATIBLE, KEYRING

logger = logging.getLogger(__name__)

INFO_TIMEOUT_S = 300  # the signature check reads the bundle's hash tree
# RAUC starts (D-Bus activation) and asks the boot backend a few times: seconds on a Pi,
# over a minute on an emulated CPU that also runs the mirror
MARK_TIMEOUT_S = 600
INSTALL_TIMEOUT_S = 3600
PROGRESS_LINE = re.compile(r"^\s*(\d{1,3})%\s+(.*\S)\s*$")
NOISE = re.compile(r"^rauc-(?:Message|Debug|Info):\s*[\d:.]*:?\s*")

Say = Callable[[str], None]


@dataclass(frozen=True)
class BundleInfo:
    compatible: str
    version: str
    build: str


def _last_words(stderr: str) -> str:
    """RAUC's reason, without its log prefixes: the last line that says something."""
    lines = [NOISE.sub("", line).strip() for line in stderr.splitlines()]
    said = [line for line in lines if line and not line.startswith(("Reading bundle", "Verify"))]
    return said[-1] if said else "no reason given"


def check_bundle(bundle: Path, keyring: Path = Path(str(KEYRING))) -> BundleInfo:
    """The bundle's signature checked against ``keyring`` (the installer's certificate),
    and what it says it is; an :class:`UpdateError` with RAUC's reason otherwise."""
    if not keyring.is_file():
        raise UpdateError(f"no update certificate at {keyring}: this image takes no bundles")
    cmd = [rauc_path(), "info", "--keyring", str(keyring), "--output-format=json", str(bundle)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=INFO_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise UpdateError(f"{bundle.name} refused: {_last_words(done.stderr)}")
    try:
        data = json.loads(done.stdout)
    except ValueError as exc:
        raise UpdateError(f"{bundle.name}: rauc info gave no JSON") from exc
    info = BundleInfo(
        str(data.get("compatible", "")), str(data.get("version", "")), str(data.get("build", ""))
    )
    if info.compatible != COMPATIBLE:
        raise UpdateError(
            f"{bundle.name} is for {info.compatible!r}, not this mirror ({COMPATIBLE!r})"
        )
    return info


def install(bundle: Path, say: Say) -> None:
    """``rauc install``: its progress said as it comes; an :class:`UpdateError` on failure
    (the slot not running is then marked bad and nothing else changed)."""
    cmd = [rauc_path(), "install", str(bundle)]
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    ) as proc:
        assert proc.stdout is not None
        lines: list[str] = []
        for raw in proc.stdout:
            line = NOISE.sub("", raw).strip()
            if not line:
                continue
            lines.append(line)
            found = PROGRESS_LINE.match(line)
            if found is not None:
                say(f"{int(found.group(1)):3d}% {found.group(2)}")
            logger.info("rauc: %s", line)
        code = proc.wait(timeout=INSTALL_TIMEOUT_S)
    if code != 0:
        errors = [line for line in lines if "error" in line.lower() or "failed" in line.lower()]
        raise UpdateError(f"installing {bundle.name} failed: {(errors or lines or ['?'])[-1]}")


def mark(good: bool) -> None:
    """``rauc status mark-good`` / ``mark-bad`` for the booted slot."""
    verb = "mark-good" if good else "mark-bad"
    cmd = [rauc_path(), "status", verb, "booted"]
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=MARK_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise UpdateError(f"rauc status {verb} did not end in {MARK_TIMEOUT_S} s") from exc
    if done.returncode != 0:
        raise UpdateError(f"rauc status {verb}: {_last_words(done.stderr)}")
