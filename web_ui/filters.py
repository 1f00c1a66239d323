"""Template filters: how the dashboard writes each kind of value (static/dashboard.js matches)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from flask import Flask

from web_ui.status import extra_label

logger = logging.getLogger(__name__)


def duration(seconds: float) -> str:
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


_FORMATS: dict[str, Callable[[Any], str]] = {
    "bool": lambda v: "yes" if v else "no",
    "camera": lambda v: "connected" if v else "missing",
    "fps": lambda v: f"{float(v):.1f}",
    "ms": lambda v: f"{float(v):.0f} ms",
    "duration": lambda v: duration(float(v)),
    "int": lambda v: str(int(v)),
}


def fmt_value(value: Any, fmt: str = "text") -> str:
    if value is None or value == "":
        return "–"
    if isinstance(value, bool):
        fmt = "camera" if fmt == "camera" else "bool"
    if fmt in _FORMATS:
        return _FORMATS[fmt](value)
    if fmt == "auto" and isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "–"
    return str(value)


def clock(at_unix: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at_unix))


def init_app(app: Flask) -> None:
    app.add_template_filter(fmt_value, "fmt_value")
    app.add_template_filter(clock, "clock")
    app.add_template_filter(extra_label, "extra_label")
