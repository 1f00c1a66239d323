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

Every Raspberry Pi profile with a screen gets the profile's mode on both HDMI
ports (``video=HDMI-A-1:1280x720@60``) in the same two files: without it the
kernel takes the screen's preferred mode, on a 4K TV an 8-megapixel framebuffer
that a Pi cannot fill at frame rate (the service's watchdog then restarts it
in a loop). The firmware's own ``hdmi_*`` settings do not reach vc4's KMS driver.
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
PI_HDMI_PORTS = ("HDMI-A-1", "HDMI-A-2")
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


def with_words(cmdline: str, words: tuple[str, ...]) -> str:
    """The one-line kernel command line with each of ``words`` exactly once, in place of
    earlier words with the same setting (``vt.global_cursor_default=``, or
    ``video=HDMI-A-1:`` for one connector), else at the end; every other word kept, in order."""
    out = cmdline.split()
    for word in words:
        setting = _setting(word)
        found = [i for i, old in enumerate(out) if _setting(old) == setting]
        if not found:
            out.append(word)
        else:
            out[found[0]] = word
            out = [w for i, w in enumerate(out) if i not in found[1:]]
    return " ".join(out) + "\n"


def with_cursor_off(cmdline: str) -> str:
    return with_words(cmdline, (CURSOR_OFF,))


def _setting(word: str) -> str:
    """What a word sets: ``video=HDMI-A-1:`` (one per connector), else the text up to ``=``."""
    if word.startswith("video=") and ":" in word:
        return word.split(":", 1)[0] + ":"
    return word.split("=", 1)[0] + "=" if "=" in word else word


def video_words(profile: HardwareProfile) -> tuple[str, ...]:
    """A Raspberry Pi profile's screen mode on the board's two HDMI ports (none for another
    board or a headless profile)."""
    board = profile.match.device_tree_model_contains or ""
    if profile.display.connector == "headless" or not board.startswith("Raspberry Pi"):
        return ()
    mode = f"{profile.display.resolution}@60"
    return tuple(f"video={port}:{mode}" for port in PI_HDMI_PORTS)


def console_actions(layout: Layout, profile: HardwareProfile) -> list[Action]:
    words = video_words(profile)
    actions: list[Action] = []
    if is_framebuffer_kiosk(profile):
        actions += [mask(layout, unit) for unit in GETTY_UNITS]
        actions.append(file_action(layout, TMPFILES, TMPFILES_TEXT.encode("utf-8"), 0o644))
        words = (CURSOR_OFF, *words)
    for path in (PI_CMDLINE, RASPI_EXTRA) if words else ():
        action = _words_in(layout, path, words)
        if action is not None:
            actions.append(action)
    return actions


def _words_in(layout: Layout, path: PurePosixPath, words: tuple[str, ...]) -> Action | None:
    """``path`` with ``words``: the Pi's ``cmdline.txt`` where there is one, and
    raspi-firmware's kept extra words where that package manages it."""
    host = layout.host(path)
    if path == RASPI_EXTRA and not layout.host(RASPI_FIRMWARE).is_file():
        return None
    if not host.is_file():
        if path == PI_CMDLINE:
            return None
        return file_action(layout, path, with_words("", words).encode("utf-8"), 0o644)
    old = host.read_bytes()
    new = with_words(old.decode("utf-8", "replace"), words).encode("utf-8")
    # the same words: unchanged, whatever the spacing or final newline
    if old.split() == new.split():
        new = old
    return file_action(layout, path, new, host.stat().st_mode & 0o777)
