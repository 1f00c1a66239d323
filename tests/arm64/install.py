"""Drive the project's own provisioning: an offline bundle for the suite's platform, then a root.

Both steps run ``mirror`` from the interpreter running the tests (the project's
``.venv`` on the host). pip's cache for the bundle's wheel downloads is kept
beside the cached roots (``~/.cache/face-mirror/pip``), so a second run
downloads nothing; the models come from the host's verified model store when
it has them.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from appliance.paths import model_cache_dir
from tests.arm64.chroot import beside_root
from tests.arm64.roots import cache_root
from tests.arm64.suites import Suite

logger = logging.getLogger(__name__)

PROFILE = "rpi4-cpu"
BUNDLE_TIMEOUT_S = 900
PROVISION_TIMEOUT_S = 900


def host_mirror() -> str:
    return str(Path(sys.executable).with_name("mirror"))


def pip_cache() -> Path:
    return cache_root().parent / "pip"


def bundle_command(suite: Suite, out: Path) -> list[str]:
    cmd = [host_mirror(), "provision", "bundle", str(out), "--with-wheels"]
    cmd += ["--target", suite.target, "--profile", PROFILE]
    models = model_cache_dir()
    if models.is_dir() and any(models.iterdir()):
        cmd += ["--from", str(models)]  # the host's verified models: no download
    return cmd


def make_bundle(suite: Suite, out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIP_CACHE_DIR": str(pip_cache())}
    return subprocess.run(
        bundle_command(suite, out),
        capture_output=True,
        text=True,
        env=env,
        timeout=BUNDLE_TIMEOUT_S,
        check=False,
    )


def provision_command(root: Path, bundle: Path) -> list[str]:
    cmd = [host_mirror(), "provision", "--root", str(root), "--bundle", str(bundle)]
    return [*cmd, "--profile", PROFILE]


def provision(root: Path, bundle: Path) -> subprocess.CompletedProcess[str]:
    """``mirror provision`` into ``root`` (as root, while the root has /proc, /sys, /dev)."""
    return beside_root(root, provision_command(root, bundle), timeout=PROVISION_TIMEOUT_S)


def explain(what: str, proc: subprocess.CompletedProcess[str], lines: int = 25) -> str:
    """A failure message: the command's exit status and the end of its output."""
    out = (proc.stdout + "\n" + proc.stderr).strip().splitlines()[-lines:]
    return f"{what} exited {proc.returncode}:\n" + "\n".join(out)
