"""Arguments and set-up shared by the sub-commands."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from appliance.config import Settings, load_settings
from appliance.errors import ConfigError
from appliance.paths import data_dir

MAX_FPS = 240.0  # as the settings' pipeline.target_fps


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", type=Path, default=None, help="settings file (default: DATA_DIR/config.yaml)"
    )


def load_cli_settings(args: argparse.Namespace) -> Settings:
    """The ``--config`` file (an error when it does not exist), else DATA_DIR's (or defaults)."""
    if args.config is not None:
        return load_settings(args.config, required=True)
    return load_settings(data_dir() / "config.yaml")


def check_fps(value: float, option: str = "--fps") -> None:
    """A frame rate above 0 and at most :data:`MAX_FPS` (not inf or nan), or ``ConfigError``."""
    if not (math.isfinite(value) and 0 < value <= MAX_FPS):
        raise ConfigError(f"{option} must be above 0 and at most {MAX_FPS:g} fps, got {value:g}")


def check_seconds(value: float, option: str) -> None:
    """A finite number of seconds, 0 or more, or ``ConfigError``."""
    if not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"{option} must be a number of seconds, 0 or more, got {value:g}")


class ProgressBar:
    """A one-line progress bar on stderr, redrawn at most ten times a second."""

    def __init__(self, total: int | None, label: str, width: int = 30) -> None:
        self.total = total if total and total > 0 else None
        self.label = label
        self.width = width
        self.count = 0
        self._start = time.monotonic()
        self._last_draw = 0.0
        self._tty = sys.stderr.isatty()

    def update(self, count: int) -> None:
        self.count = count
        now = time.monotonic()
        if now - self._last_draw >= 0.1 or count == self.total:
            self._last_draw = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        fps = self.count / max(now - self._start, 1e-6)
        if self.total:
            filled = int(self.width * self.count / self.total)
            bar = "#" * filled + "-" * (self.width - filled)
            text = f"{self.label} [{bar}] {self.count}/{self.total} frames, {fps:.1f} fps"
        else:
            text = f"{self.label} {self.count} frames, {fps:.1f} fps"
        end = "\r" if self._tty else "\n"
        if self._tty or self.count == self.total or self.count % 25 == 0:
            print(text, end=end, file=sys.stderr, flush=True)

    def close(self) -> None:
        self._draw(time.monotonic())
        if self._tty:
            print(file=sys.stderr)
