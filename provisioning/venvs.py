"""The device's venvs side by side: one folder per install, ``venv`` a link to the active one.

::

    /opt/mirror/venvs/1.4.0-3f2a9c1d0b7e/   made by one install (its stamp written last)
    /opt/mirror/venvs/1.3.2-91ab04c7d2e5/   the one that ran before
    /opt/mirror/venv -> venvs/1.4.0-3f2a9c1d0b7e            what the unit runs
    /opt/mirror/venv.previous -> venvs/1.3.2-91ab04c7d2e5   the way back

An install makes its own folder (named by the version and a hash of its stamp)
and never writes into the one in use. The stamp (:data:`STAMP`) is written last:
a folder without it is unfinished (pip interrupted, the power cut) and the next
install removes it. The links are relative (the same on a mounted image and on
the device) and switched atomically (a new link renamed over the old one). An
older install's plain folder at ``venv`` is adopted: moved into ``venvs/`` and
linked. Only the active and the previous venv are kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from appliance.errors import OutputError
from provisioning.layout import Layout
from provisioning.links import make_link

logger = logging.getLogger(__name__)

STAMP = "mirror-install.json"
ADOPTED = "adopted"  # an older install's folder without a readable stamp


def venv_id(stamp: dict[str, Any]) -> str:
    """``<version>-<12 hex digits of the stamp's sha256>``: one name per installed set."""
    text = json.dumps(stamp, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return f"{stamp.get('version', 'unknown')}-{hashlib.sha256(text).hexdigest()[:12]}"


def venv_dir(layout: Layout, vid: str) -> PurePosixPath:
    return layout.venvs_dir / vid


def read_stamp(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_finished(folder: Path) -> bool:
    """The install that made ``folder`` got to its end (the stamp and the command are there)."""
    return read_stamp(folder) is not None and (folder / "bin" / "mirror").is_file()


@dataclass(frozen=True)
class Links:
    """The venv ids the two links point at (None: no link, or not into ``venvs/``)."""

    active: str | None
    previous: str | None


def _linked(layout: Layout, link: PurePosixPath) -> str | None:
    host = layout.host(link)
    if not host.is_symlink():
        return None
    name = PurePosixPath(os.readlink(host)).name
    return name if layout.host(venv_dir(layout, name)).is_dir() else None


def read_links(layout: Layout) -> Links:
    return Links(_linked(layout, layout.venv), _linked(layout, layout.previous_venv))


def has_plain_venv(layout: Layout) -> bool:
    host = layout.host(layout.venv)
    return host.is_dir() and not host.is_symlink()


def adopt_plain(layout: Layout) -> str | None:
    """An older install's folder at ``venv`` moved into ``venvs/`` and linked; its id."""
    if not has_plain_venv(layout):
        return None
    host = layout.host(layout.venv)
    stamp = read_stamp(host)
    vid = venv_id(stamp) if stamp is not None else ADOPTED
    if layout.host(venv_dir(layout, vid)).exists():
        vid = f"{vid}-{ADOPTED}"
        _remove(layout.host(venv_dir(layout, vid)))
    target = layout.host(venv_dir(layout, vid))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # (the folder is missing from its path until the link below: the shortest window
        # two renames allow; it happens once per device)
        os.rename(host, target)
    except OSError as exc:
        raise OutputError(f"cannot move {host} to {target}: {exc.strerror or exc}") from exc
    make_link(host, _relative(layout, vid))
    logger.info("adopted the plain venv %s as %s", host, target)
    return vid


def point(layout: Layout, active: str, previous: str | None) -> None:
    """The links set: ``previous`` first, then the active one (each renamed over the old)."""
    prev_host = layout.host(layout.previous_venv)
    if previous is None or previous == active:
        with contextlib.suppress(FileNotFoundError):
            prev_host.unlink()
    else:
        make_link(prev_host, _relative(layout, previous))
    make_link(layout.host(layout.venv), _relative(layout, active))


def _relative(layout: Layout, vid: str) -> PurePosixPath:
    return PurePosixPath(layout.venvs_dir.name) / vid


def remove_unfinished(layout: Layout) -> list[str]:
    """Remove the folders an interrupted install left (no stamp); never a linked one."""
    links = read_links(layout)
    gone = [
        f.name
        for f in _folders(layout)
        if f.name not in (links.active, links.previous) and read_stamp(f) is None
    ]
    for name in gone:
        _remove(layout.host(venv_dir(layout, name)))
    return gone


def prune(layout: Layout) -> list[str]:
    """Remove every venv but the active and the previous one."""
    links = read_links(layout)
    if links.active is None:
        return []
    gone = [f.name for f in _folders(layout) if f.name not in (links.active, links.previous)]
    for name in gone:
        _remove(layout.host(venv_dir(layout, name)))
    return gone


def _folders(layout: Layout) -> list[Path]:
    base = layout.host(layout.venvs_dir)
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.is_dir() and not p.is_symlink())


def remove_folder(layout: Layout, vid: str) -> None:
    _remove(layout.host(venv_dir(layout, vid)))


def _remove(path: Path) -> None:
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputError(f"cannot remove {path}: {exc.strerror or exc}") from exc
    logger.info("removed %s", path)
