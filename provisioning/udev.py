"""udev rules: the Coral (USB and PCIe) and the camera, usable by the service user.

The Coral USB accelerator shows up as 1a6e:089a before its firmware loads
and as 18d1:9302 after; both go to the ``mirror`` group. A PCIe/M.2 Coral is
``/dev/apex_*``. Cameras (video4linux) go to ``video``, which the service
user is in; ``mirror-camera`` is a stable link to the first capture node.
GPIO character devices (``/dev/gpiochip*``) go to ``gpio``: Debian's udev leaves
them to root (Raspberry Pi OS adds the same rule), and lgpio opens them for the
status LED, the button, the PIR sensor and the fan.
"""

from __future__ import annotations

import logging

from provisioning.layout import SERVICE_USER

logger = logging.getLogger(__name__)

CORAL_USB_IDS = (("1a6e", "089a"), ("18d1", "9302"))


def render_udev_rules() -> str:
    lines = ["# Written by `mirror provision`."]
    for vendor, product in CORAL_USB_IDS:
        lines.append(
            f'SUBSYSTEM=="usb", ATTRS{{idVendor}}=="{vendor}", ATTRS{{idProduct}}=="{product}", '
            f'GROUP="{SERVICE_USER}", MODE="0660"'
        )
    lines += [
        f'SUBSYSTEM=="apex", GROUP="{SERVICE_USER}", MODE="0660"',
        'SUBSYSTEM=="video4linux", GROUP="video", MODE="0660"',
        'SUBSYSTEM=="gpio", KERNEL=="gpiochip*", GROUP="gpio", MODE="0660"',
        'SUBSYSTEM=="video4linux", ATTR{index}=="0", ENV{ID_V4L_CAPABILITIES}=="*:capture:*", '
        'SYMLINK+="mirror-camera"',
    ]
    return "\n".join(lines) + "\n"
