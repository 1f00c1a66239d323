"""Where provisioning puts things on the device, and how a device path maps under ``--root``.

Every path here is the path *on the device* (``/var/lib/mirror/...``);
:meth:`Layout.host` turns it into the path written on this machine, under
the root being provisioned (``/`` on the live system, a mounted image
otherwise).

Two options serve tests and staging: ``live`` treats a temporary root as the
running system (its live-system steps then go to an injected runner), and
``host_python`` builds the venv with this machine's interpreter at the host
paths under the root instead of through ``chroot`` (same machine, no root
privileges needed; the venv then only runs here).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

DATA_DIR = PurePosixPath("/var/lib/mirror")
UNIT = PurePosixPath("/etc/systemd/system/mirror.service")
ENV_FILE = PurePosixPath("/etc/default/mirror")
SYSUSERS = PurePosixPath("/usr/lib/sysusers.d/mirror.conf")
UDEV_RULES = PurePosixPath("/etc/udev/rules.d/70-mirror.rules")
DEFAULT_VENV = PurePosixPath("/opt/mirror/venv")
WANTS_LINK = PurePosixPath("/etc/systemd/system/multi-user.target.wants/mirror.service")
TMPFILES = PurePosixPath("/etc/tmpfiles.d/mirror-console.conf")
PI_CMDLINE = PurePosixPath("/boot/firmware/cmdline.txt")
SERVICE_USER = "mirror"


@dataclass(frozen=True)
class Layout:
    """The target root and the device paths under it."""

    root: Path
    data_dir: PurePosixPath = DATA_DIR
    venv: PurePosixPath = DEFAULT_VENV
    live: bool | None = None  # None: live when root is /
    host_python: Path | None = None

    @property
    def wheels_dir(self) -> PurePosixPath:
        """The bundle's wheels, beside the venv (``/opt/mirror/wheels``)."""
        return self.venv.parent / "wheels"

    @property
    def venvs_dir(self) -> PurePosixPath:
        """Each install's own venv (``/opt/mirror/venvs/<version>-<hash>``); ``venv`` is a link
        to the active one (see :mod:`provisioning.venvs`)."""
        return self.venv.parent / "venvs"

    @property
    def previous_venv(self) -> PurePosixPath:
        """A link to the venv that ran before the active one (the way back)."""
        return self.venv.with_name(f"{self.venv.name}.previous")

    @property
    def models_dir(self) -> PurePosixPath:
        return self.data_dir / "models"

    @property
    def web_dir(self) -> PurePosixPath:
        return self.data_dir / "web"

    @property
    def config(self) -> PurePosixPath:
        return self.data_dir / "config.yaml"

    @property
    def auth(self) -> PurePosixPath:
        return self.web_dir / "auth.json"

    @property
    def secret_key(self) -> PurePosixPath:
        return self.web_dir / "secret_key"

    @property
    def first_boot(self) -> PurePosixPath:
        return self.web_dir / "first-boot.txt"

    @property
    def web_config(self) -> PurePosixPath:
        return self.web_dir / "web.yaml"

    def host(self, device_path: PurePosixPath) -> Path:
        """The path on this machine of ``device_path`` on the provisioned root."""
        return self.root / str(device_path).lstrip("/")

    def is_live(self) -> bool:
        if self.live is not None:
            return self.live
        return self.root.resolve() == Path("/").resolve()
