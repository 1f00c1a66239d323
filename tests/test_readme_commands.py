"""The README's `mirror` synopsis is true: every command and option it shows exists.

Each line of the synopsis block is a subcommand (``mirror models fetch``) and the
long options written after it; each option must appear in that subcommand's own
``--help``. The commands the installer's path spells out in full are checked
the same way.
"""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
MIRROR = [sys.executable, "-m", "appliance.cli.main"]
# A subcommand: `mirror` and then lower-case words (the positional words of the synopsis).
_COMMAND = re.compile(r"\bmirror((?: [a-z][a-z-]*)+)")
_OPTION = re.compile(r"(--[a-z][a-z0-9-]*)")


def synopsis_lines() -> list[str]:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    lines: list[str] = []
    for block in blocks:
        current = ""
        for raw in block.splitlines():
            line = raw.split("#", 1)[0].rstrip()
            if line.lstrip().startswith("mirror ") or " mirror " in line:
                current = line
                lines.append(current)
            elif line.startswith(" ") and current and line.strip().startswith(("[", "--")):
                lines[-1] += " " + line.strip()
    return lines


@cache
def help_text(words: tuple[str, ...]) -> str:
    proc = subprocess.run(
        [*MIRROR, *words, "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    return proc.stdout if proc.returncode == 0 else ""


def subcommand(words: list[str]) -> tuple[str, ...]:
    """The longest prefix of ``words`` that `mirror` accepts as a subcommand."""
    for end in range(len(words), 0, -1):
        if help_text(tuple(words[:end])):
            return tuple(words[:end])
    return ()


LINES = synopsis_lines()


def test_the_readme_shows_mirror_commands() -> None:
    assert len(LINES) >= 10, LINES


@pytest.mark.parametrize("line", LINES)
def test_every_option_shown_exists(line: str) -> None:
    match = _COMMAND.search(line)
    assert match, line
    words = subcommand(match.group(1).split())
    assert words, f"`mirror{match.group(1)}` is not a mirror subcommand"
    shown = set(_OPTION.findall(line[match.end() :]))
    missing = sorted(opt for opt in shown if opt not in help_text(words))
    assert not missing, f"mirror {' '.join(words)} has no {missing}"
