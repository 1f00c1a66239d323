"""The logging convention: each module's own ``logger = logging.getLogger(__name__)``.

Decision (issue 15): a module keeps its logger even while it logs nothing (the
house rule: one per module, so a new log line needs no boilerplate and every
record is named after its module). What is checked instead is that nothing logs
any other way: no root-logger calls (``logging.info(...)``), and every module
that logs through ``logger`` defines its own (``logging.getLogger()`` to attach a
handler or quieten a library stays allowed).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted(p for package in ("appliance", "web_ui") for p in (ROOT / package).rglob("*.py"))
CONVENTION = "logger = logging.getLogger(__name__)"
LOG_CALLS = {"debug", "info", "warning", "error", "exception", "critical", "log"}


def _problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    problems = []
    own = CONVENTION in path.read_text(encoding="utf-8")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
            root = isinstance(target, ast.Name) and target.id == "logging"
            if root and node.func.attr in LOG_CALLS:
                problems.append(f"line {node.lineno}: logs through the root logger")
            if (
                isinstance(target, ast.Name)
                and target.id == "logger"
                and node.func.attr in LOG_CALLS
                and not own
            ):
                problems.append(f"line {node.lineno}: logs without its own module logger")
    return problems


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_log_only_through_their_own_logger(path: Path) -> None:
    assert _problems(path) == []
