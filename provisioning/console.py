"""Framebuffer kiosks: nothing of the text console may draw over the mirror's picture.

On a framebuffer the kernel's console (fbcon) keeps a blinking cursor on
tty1 and getty prints a login prompt there, both over the picture the
mirror writes into ``/dev/fb0``. So, for profiles whose display is the
framebuffer:

- getty stays off the mirror's tty: ``getty@tty1.service`` is masked (a link
  to ``/dev/null``), and ``autovt@tty1.service`` too, the name logind starts
  it under when that VT is switched to;
- a tmpfiles.d file, applied at every boot by systemd-tmpfiles, stops the
  cursor blinking and unbinds fbcon from the framebuffer (``vtcon1`` is the
  framebuffer console once the fb driver is up; ``vtcon0`` stays the dummy
  console), so the console draws nothing on it at all;
- on a Raspberry Pi root (``/boot/firmware/cmdline.txt``) the kernel is also
  told ``vt.global_cursor_default=0``, which hides the cursor from the first
  boot message on, before systemd runs; the rest of that one-line file is kept;
- where Debian's ``raspi-firmware`` manages that file (``/etc/default/raspi-firmware``
  exists), it writes ``cmdline.txt`` anew at every kernel update from its settings
  and ``/etc/default/raspi-extra-cmdline``: the word goes into that kept file too
  (its other words kept), so the cursor stays off after an update.

SDL (KMS) and headless profiles get none of this: a KMS master owns the
screen and the console does not draw over it.
"""

from __future__ import annotations

import logging
from pathlib import PurePosixPath

from appliance.device.profile import HardwareProfile
from provisioning.actions import Action, file_action
from provisioning.layout import PI_CMDLINE, TMPFILES, Layout
from provisioning.links import mask

logger = logging.getLogger(__name__)

RASPI_FIRMWARE = PurePosixPath("/etc/default/raspi-firmware")
RASPI_EXTRA = PurePosixPath("/etc/default/raspi-extra-cmdline")

GETTY_UNITS = ("getty@tty1.service", "autovt@tty1.service")
CURSOR_SETTING = "vt.global_cursor_default="
CURSOR_OFF = f"{CURSOR_SETTING}0"
TMPFILES_TEXT = (
    "# Written by `mirror provision`: the console draws nothing over the mirror's framebuffer.\n"
    "w /sys/class/graphics/fbcon/cursor_blink - - - - 0\n"
    "w /sys/class/vtconsole/vtcon1/bind - - - - 0\n"
)


def is_framebuffer_kiosk(profile: HardwareProfile) -> bool:
    display = profile.display
    return display.kind == "framebuffer" and display.connector != "headless"


def with_cursor_off(cmdline: str) -> str:
    """The one-line kernel command line with ``vt.global_cursor_default=0`` exactly once
    (in place of an earlier value, else at the end); every other word kept, in order."""
    words = cmdline.split()
    found = [i for i, word in enumerate(words) if word.startswith(CURSOR_SETTING)]
    if not found:
        words.append(CURSOR_OFF)
    else:
        words[found[0]] = CURSOR_OFF
        words = [w for i, w in enumerate(words) if i not in found[1:]]
    return " ".join(words) + "\n"


def console_actions(layout: Layout, profile: HardwareProfile) -> list[Action]:
    if not is_framebuffer_kiosk(profile):
        return []
    actions = [mask(layout, unit) for unit in GETTY_UNITS]
    actions.append(file_action(layout, TMPFILES, TMPFILES_TEXT.encode("utf-8"), 0o644))
    for path in (PI_CMDLINE, RASPI_EXTRA):
        action = _cursor_off_in(layout, path)
        if action is not None:
            actions.append(action)
    return actions


def _cursor_off_in(layout: Layout, path: PurePosixPath) -> Action | None:
    """``path`` with the cursor word: the Pi's ``cmdline.txt`` where there is one, and
    raspi-firmware's kept extra words where that package manages it."""
    host = layout.host(path)
    if path == RASPI_EXTRA and not layout.host(RASPI_FIRMWARE).is_file():
        return None
    if not host.is_file():
        if path == PI_CMDLINE:
            return None
        return file_action(layout, path, with_cursor_off("").encode("utf-8"), 0o644)
    old = host.read_bytes()
    new = with_cursor_off(old.decode("utf-8", "replace")).encode("utf-8")
    # the same words: unchanged, whatever the spacing or final newline
    if old.split() == new.split():
        new = old
    return file_action(layout, path, new, host.stat().st_mode & 0o777)
