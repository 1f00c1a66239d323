"""Install an update bundle from a file or an ``http(s)://`` URL, then boot it on trial.

The same steps for ``mirror update install``, a USB stick and the admin page: the
bundle fetched (a URL: downloaded onto the data partition first; Debian 12's RAUC 1.8
is built without streaming), its signature and compatibility checked by ``rauc info``
against the card's keyring, ``rauc install`` into the slot not running (its progress
said as it comes), then a reboot with the firmware's tryboot flag: the new slot boots
once, on trial (:mod:`provisioning.image.tryboot`; :mod:`provisioning.update.confirm`
keeps it only when the mirror is healthy on it). A refused or failed bundle changes
nothing on the running slot.
"""

from __future__ import annotations

import logging
import os
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from provisioning.errors import UpdateError
from provisioning.image.tryboot import CMDLINE, booted_slot
from provisioning.update import rauc_cli
from provisioning.update.rauc_cli import BundleInfo

logger = logging.getLogger(__name__)

DOWNLOAD_TIMEOUT_S = 60.0  # per read
CHUNK = 1024 * 1024
TRYBOOT_REBOOT = ["systemctl", "reboot", "0 tryboot"]

Say = Callable[[str], None]


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def download(url: str, folder: Path, say: Say) -> Path:
    """``url`` saved in ``folder`` (whole, or nothing left behind), with progress."""
    name = Path(urllib.parse.urlparse(url).path).name or "update.raucb"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    partial = folder / f".{name}.partial"
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:
            total = int(response.headers.get("Content-Length") or 0)
            got, next_say = 0, 0.0
            with partial.open("wb") as out:
                while chunk := response.read(CHUNK):
                    out.write(chunk)
                    got += len(chunk)
                    if total and got / total >= next_say:
                        say(f"downloading {name}: {got / total:4.0%} of {total / 1e6:.0f} MB")
                        next_say += 0.1
                out.flush()
                os.fsync(out.fileno())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        partial.unlink(missing_ok=True)
        raise UpdateError(f"cannot download {url}: {getattr(exc, 'reason', exc)}") from exc
    os.replace(partial, target)
    return target


def install_update(
    source: str,
    say: Say,
    *,
    download_dir: Path,
    reboot: bool = True,
    cmdline: Path = CMDLINE,
) -> BundleInfo:
    """Install ``source`` (a bundle file or URL) into the slot not running; reboot into it
    on trial unless ``reboot`` is false. An :class:`UpdateError` line when refused."""
    booted = booted_slot(cmdline)
    if booted is None:
        raise UpdateError(
            "this system did not boot from an A/B slot (no rauc.slot= on the kernel command "
            "line): update it with `mirror provision --bundle` (README: Updating a mirror)"
        )
    fetched = is_url(source)
    bundle = download(source, download_dir, say) if fetched else Path(source)
    try:
        if not bundle.is_file():
            raise UpdateError(f"{bundle}: no such file")
        info = rauc_cli.check_bundle(bundle)
        say(f"{bundle.name}: version {info.version} (built {info.build}), signature good")
        rauc_cli.install(bundle, say)
    finally:
        if fetched:
            bundle.unlink(missing_ok=True)
    say(f"version {info.version} installed beside slot {booted}: it boots next, on trial")
    if reboot:
        say("rebooting into it")
        subprocess.run(TRYBOOT_REBOOT, check=False)
    return info
