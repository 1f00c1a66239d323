"""The systemd unit and its environment file, rendered from the profile and the layout.

``Type=notify``: the runtime sends ``READY=1`` once frames flow and
``WATCHDOG=1`` while they keep flowing; systemd restarts it when they stop
(``WatchdogSec``) or when it fails (``Restart=on-failure``, forever:
``StartLimitIntervalSec=0``), except on ``EXIT_NOT_RUNNABLE`` (78: an
unsupported device or a broken install, which no restart mends). It runs as
the unprivileged ``mirror`` user, sees the file system read-only except its
data directory, and cannot gain privileges. ``StateDirectory=`` hands the data
directory (written by root at provisioning) to that user at every start; it
is also the working directory (lgpio writes its notify pipes into the working
directory, ``LG_WD``, and everything else is read-only).

A Jetson CSI camera (``capture.kind: gstreamer-csi``) is reached through
nvargus-daemon's socket ``/tmp/argus_socket``: the unit then keeps the real
``/tmp`` (no ``PrivateTmp``, and writable), and starts after the daemon.
"""

from __future__ import annotations

import logging
import shlex

from appliance.device.profile import HardwareProfile
from appliance.errors import EXIT_NOT_RUNNABLE
from provisioning.layout import ENV_FILE, SERVICE_USER, Layout

logger = logging.getLogger(__name__)

WATCHDOG_S = 10
# The first start may build TensorRT engines before READY=1.
START_TIMEOUT_S = 600


def supplementary_groups(profile: HardwareProfile) -> list[str]:
    """``video`` always (camera, GPU); ``gpio`` where the profile has GPIO pins."""
    return ["video", "gpio"] if profile.gpio is not None else ["video"]


def exec_start(profile: HardwareProfile, layout: Layout) -> str:
    capture = profile.capture
    args = [
        str(layout.venv / "bin" / "mirror"),
        "run",
        "--source",
        "camera",  # the profile's camera: V4L2, Picamera2 or Jetson CSI, mirrored
        "--display",
        "auto",  # the profile's HDMI screen
        "--size",
        capture.resolution,
        "--fps",
        f"{capture.fps:g}",
        "--profile",
        profile.name,
        "--no-preview",
    ]
    return shlex.join(args)


ARGUS_DAEMON = "nvargus-daemon.service"


def uses_argus(profile: HardwareProfile) -> bool:
    """A Jetson CSI camera: nvarguscamerasrc talks to nvargus-daemon through /tmp."""
    return profile.capture.kind == "gstreamer-csi"


def render_unit(profile: HardwareProfile, layout: Layout) -> str:
    data = str(layout.data_dir)
    argus = uses_argus(profile)
    after = "network.target systemd-udevd.service" + (f" {ARGUS_DAEMON}" if argus else "")
    writable = f"{data} /tmp" if argus else data
    lines = [
        "# Written by `mirror provision`; a second run rewrites it unchanged.",
        "[Unit]",
        "Description=Face-swap mirror",
        f"After={after}",
        *([f"Wants={ARGUS_DAEMON}"] if argus else []),
        "StartLimitIntervalSec=0",
        "",
        "[Service]",
        "Type=notify",
        "NotifyAccess=main",
        f"EnvironmentFile={ENV_FILE}",
        f"ExecStart={exec_start(profile, layout)}",
        f"WorkingDirectory={data}",
        f"WatchdogSec={WATCHDOG_S}s",
        "Restart=on-failure",
        "RestartSec=2",
        # an unsupported device or a broken install: no restart mends it (one line in
        # the journal, not one every 2 s)
        f"RestartPreventExitStatus={EXIT_NOT_RUNNABLE}",
        f"TimeoutStartSec={START_TIMEOUT_S}",
        "TimeoutStopSec=5",
        f"User={SERVICE_USER}",
        f"Group={SERVICE_USER}",
        f"SupplementaryGroups={' '.join(supplementary_groups(profile))}",
        f"StateDirectory={layout.data_dir.name}",
        "StateDirectoryMode=0750",
        "ProtectSystem=strict",
        f"ReadWritePaths={writable}",
        "ProtectHome=yes",
        *([] if argus else ["PrivateTmp=yes"]),
        "NoNewPrivileges=yes",
        "RestrictSUIDSGID=yes",
        "ProtectKernelTunables=yes",
        "ProtectControlGroups=yes",
        "LockPersonality=yes",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
    ]
    return "\n".join(lines) + "\n"


def render_env_file(profile: HardwareProfile, layout: Layout) -> str:
    # (the profile is on ExecStart's command line; LG_WD: where lgpio puts its pipes)
    return (
        "# Written by `mirror provision`: read by mirror.service.\n"
        f"MIRROR_DATA_DIR={layout.data_dir}\n"
        f"LG_WD={layout.data_dir}\n"
    )


def render_sysusers(profile: HardwareProfile, layout: Layout) -> str:
    """The service user, created at boot by systemd-sysusers (no login, no password)."""
    lines = [
        "# Written by `mirror provision`.",
        f'u {SERVICE_USER} - "Face-swap mirror" {layout.data_dir} -',
    ]
    for group in supplementary_groups(profile):
        lines.append(f"g {group} -")
        lines.append(f"m {SERVICE_USER} {group}")
    return "\n".join(lines) + "\n"
