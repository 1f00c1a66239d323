"""The Debian releases the install test covers, and what each root holds."""

from __future__ import annotations

from dataclasses import dataclass

# python3-venv: the device's venv; systemd: systemd-analyze and the unit's targets. Nothing
# more: every package is configured emulated (ca-certificates alone takes minutes).
PACKAGES = ("python3", "python3-venv", "systemd")
# Left out of the root (dpkg path-exclude): pages nobody reads in a test root.
EXCLUDED = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*")


@dataclass(frozen=True)
class Suite:
    codename: str  # what mmdebstrap is given
    debian: int
    python: str  # the root's own python3
    target: str  # `mirror provision bundle --target`
    arch: str = "arm64"
    variant: str = "apt"
    packages: tuple[str, ...] = PACKAGES
    excluded: tuple[str, ...] = EXCLUDED


SUITES = (
    Suite("bookworm", 12, "3.11", "debian12-arm64"),
    Suite("trixie", 13, "3.13", "debian13-arm64"),
)
