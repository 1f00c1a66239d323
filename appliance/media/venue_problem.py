"""The installer's problem line: what an image's first boot found wrong in the venue file.

``mirror image firstboot`` (root, at every boot, before the mirror starts) writes one
line to ``/run/mirror/venue-problem`` (world-readable, on the RAM-backed ``/run``)
when the venue file on the boot partition is bad, and removes it when the file is
good. ``mirror run`` reads it when it opens the screen and shows it under the
first-boot and camera screens. ``MIRROR_VENUE_PROBLEM`` names another file (tests).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)

VENUE_PROBLEM = Path("/run/mirror/venue-problem")
PATH_ENV = "MIRROR_VENUE_PROBLEM"
MAX_CHARS = 200  # one line on the screen


def venue_problem_path() -> Path:
    return Path(os.environ.get(PATH_ENV) or VENUE_PROBLEM)


def read_venue_problem(path: Path | None = None) -> str | None:
    """The problem line, or None when there is none (or it cannot be read)."""
    path = venue_problem_path() if path is None else path
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    line = "".join(c for c in text.strip().split("\n", 1)[0] if c.isprintable()).strip()
    if not line:
        return None
    return line if len(line) <= MAX_CHARS else line[: MAX_CHARS - 1] + "…"


def write_venue_problem(path: Path, problem: str | None) -> None:
    """Leave ``problem`` at ``path`` (mode 0644, written whole), or remove the file for None."""
    if problem is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.new")
    temp.write_text(problem.strip() + "\n", encoding="utf-8")
    os.chmod(temp, 0o644)
    os.replace(temp, path)
