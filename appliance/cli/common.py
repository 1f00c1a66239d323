"""Arguments and set-up shared by the sub-commands."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from appliance.config import Settings, load_settings
from appliance.paths import data_dir


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", type=Path, default=None, help="settings file (default: DATA_DIR/config.yaml)"
    )


def load_cli_settings(args: argparse.Namespace) -> Settings:
    """The ``--config`` file (an error when it does not exist), else DATA_DIR's (or defaults)."""
    if args.config is not None:
        return load_settings(args.config, required=True)
    return load_settings(data_dir() / "config.yaml")


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
