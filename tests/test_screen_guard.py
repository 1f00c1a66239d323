"""The HDMI screen as a part that may be missing, busy, or replaced under the mirror.

The framebuffer follows its device being replaced (the firmware's simplefb
handing /dev/fb0 over to vc4's DRM driver, a new mode); ``ScreenGuard`` keeps
a screen that cannot open or fails from stopping anything, reports why, and
picks the screen up when it comes (a framebuffer plugged in later, an SDL
driver that starts working), on a faked device tree and SDL's own drivers.
"""

from __future__ import annotations

import importlib.util
import logging
import struct
from pathlib import Path

import numpy as np
import pytest

from appliance.device.profile import DisplaySpec
from appliance.errors import OutputError
from appliance.media.display import open_display, screen_sink
from appliance.media.fb_ioctl import FBIOGET_FSCREENINFO, FBIOGET_VSCREENINFO
from appliance.media.framebuffer_sink import FramebufferSink
from appliance.media.frames import Frame
from appliance.media.screen_guard import ScreenGuard
from appliance.media.sdl_sink import SdlSink
from appliance.media.sink_base import FrameSink
from tests.screen_fakes import (
    FILL,
    fb_paths,
    pixel16,
    pixel32,
    plug_fb,
    stride_of,
    unplug_fb,
)

BLUE = (255, 0, 0)  # BGR
RED = (0, 0, 255)


def frame_of(bgr: tuple[int, int, int], size: tuple[int, int] = (8, 4), index: int = 0) -> Frame:
    width, height = size
    return Frame(image=np.full((height, width, 3), bgr, np.uint8), index=index, capture_ns=index)


def showing(guard: ScreenGuard) -> FrameSink | None:
    """The guard's screen now (a call, so each read is a new one for the type checker)."""
    return guard.screen


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_simplefb_handing_fb0_over_to_vc4_is_followed_without_touching_the_old_buffer(
    tmp_path: Path,
) -> None:
    device, sysfs = plug_fb(tmp_path, "simple", (8, 4), 32)
    sink = FramebufferSink(device, sysfs_dir=sysfs, recheck_s=0.0)
    old_buffer = tmp_path / "simplefb-memory"
    with sink:
        sink.write(frame_of(BLUE))
        assert pixel32(device.read_bytes(), 32, 0, 0) == (255, 0, 0, 255)
        assert sink.identity is not None and sink.identity.name == "simple"
        # vc4 loads: simplefb is unregistered, its node and sysfs directory go; the
        # firmware may hand its memory to someone else, so nothing may write there now
        unplug_fb(tmp_path, keep_buffer=old_buffer)
        before = old_buffer.read_bytes()
        with pytest.raises(OutputError, match="cannot be opened"):
            sink.write(frame_of(RED))  # no fb0 for a moment: this frame is not shown
        assert old_buffer.read_bytes() == before
        # vc4drmfb registers a new fb0: another size and depth
        device, sysfs = plug_fb(tmp_path, "vc4drmfb", (16, 8), 16)
        sink.write(frame_of(RED, (16, 8)))
        assert sink.size == (16, 8) and sink.identity.name == "vc4drmfb"
        assert sink.reopens == 1
        assert pixel16(device.read_bytes(), 32, 15, 7) == 0xF800  # red, RGB565
    assert old_buffer.read_bytes() == before  # the stop blanks the new screen only
    assert set(device.read_bytes()) == {0}


def test_a_framebuffer_replaced_in_place_shows_the_next_frame_at_its_new_size(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    device, sysfs = plug_fb(tmp_path, "simple", (8, 4), 32)
    with FramebufferSink(device, sysfs_dir=sysfs, recheck_s=0.0) as sink:
        sink.write(frame_of(BLUE))
        plug_fb(tmp_path, "vc4drmfb", (12, 6), 32, padding=16)  # no gap: a new node at once
        with caplog.at_level(logging.WARNING):
            sink.write(frame_of(RED, (12, 6)))
        assert sink.size == (12, 6) and sink.reopens == 1
        stride = stride_of(sysfs)
        assert pixel32(device.read_bytes(), stride, 11, 5) == (0, 0, 255, 255)
        assert device.read_bytes()[12 * 4 : stride] == bytes([FILL]) * 16  # padding kept
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(said) == 1 and "simple -> vc4drmfb" in said[0], said


def test_an_unchanged_framebuffer_is_only_rechecked_every_recheck_s(tmp_path: Path) -> None:
    device, sysfs = plug_fb(tmp_path, "simple", (8, 4), 32)
    clock = Clock()
    with FramebufferSink(device, sysfs_dir=sysfs, recheck_s=1.0, clock=clock) as sink:
        sink.write(frame_of(BLUE))
        plug_fb(tmp_path, "vc4drmfb", (16, 8), 32)
        sink.write(frame_of(RED))  # within recheck_s: not looked at yet
        assert sink.reopens == 0 and sink.size == (8, 4)
        clock.now += 1.0
        sink.write(frame_of(RED))
        assert sink.reopens == 1 and sink.size == (16, 8)


class ModeKernel:
    """A kernel answering the fb ioctls with a mode the test changes (a screen swapped for
    one with another resolution): ``xres`` x ``yres`` at 32 bpp, lines of ``xres`` pixels."""

    def __init__(self, xres: int, yres: int) -> None:
        self.xres, self.yres = xres, yres

    def __call__(self, fd: int, request: int, buffer: bytearray) -> int:
        if request == FBIOGET_VSCREENINFO:
            var = [0] * 40
            var[:8] = [self.xres, self.yres, self.xres, self.yres, 0, 0, 32, 0]
            struct.pack_into("=40I", buffer, 0, *var)
        elif request == FBIOGET_FSCREENINFO:
            line = self.xres * 4
            struct.pack_into(
                "@16sL4I3HI", buffer, 0, b"simulated", 0, line * self.yres, 0, 0, 2, 1, 1, 0, line
            )
        else:
            raise OSError(22, "Invalid argument")
        return 0


def test_a_new_mode_on_the_same_device_is_read_again_from_the_kernel(tmp_path: Path) -> None:
    device, sysfs = plug_fb(tmp_path, "vc4drmfb", (32, 32), 32)  # room for both modes
    kernel = ModeKernel(8, 4)
    with FramebufferSink(device, sysfs_dir=sysfs, ioctl=kernel, recheck_s=0.0) as sink:
        sink.write(frame_of(BLUE))
        assert sink.size == (8, 4) and sink.geometry is not None
        assert sink.geometry.source == "FBIOGET_VSCREENINFO"
        kernel.xres, kernel.yres = 16, 8
        sink.write(frame_of(RED, (16, 8)))
        assert sink.size == (16, 8) and sink.reopens == 1
        assert pixel32(device.read_bytes(), 64, 15, 7) == (0, 0, 255, 255)


def test_a_screen_missing_at_start_is_reported_and_picked_up_when_plugged_in(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    device, sysfs = fb_paths(tmp_path)
    spec = DisplaySpec(kind="framebuffer")
    opened: list[object] = []

    def opener() -> FramebufferSink:
        sink = screen_sink(spec, sysfs_root=sysfs.parent, device=device)
        opened.append(sink)
        assert isinstance(sink, FramebufferSink)
        return sink

    clock = Clock()
    guard = ScreenGuard(opener, "framebuffer fb0", retry_s=2.0, clock=clock)
    with caplog.at_level(logging.WARNING):
        guard.start()  # never raises: the mirror starts without its screen
        assert guard.started and guard.screen is None
        assert guard.problem == f"framebuffer {device} not found (no screen attached?)"
        for index in range(5):  # frames flow on: counted, not shown
            guard.write(frame_of(BLUE, index=index))
        assert guard.frames_written == 5 and not opened  # not tried again before retry_s
        clock.now += 2.0
        guard.write(frame_of(BLUE))
        assert guard.screen is None and "not found" in guard.problem
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(said) == 1, said  # logged once, with its reason
    assert "not found" in said[0] and "headless" in said[0] and "every 2 s" in said[0]

    device, sysfs = plug_fb(tmp_path, "vc4drmfb", (8, 4), 32)  # the screen is plugged in
    guard.write(frame_of(BLUE))
    assert showing(guard) is None  # the next try is still retry_s away
    clock.now += 2.0
    guard.write(frame_of(RED))
    assert isinstance(showing(guard), FramebufferSink) and guard.problem == ""
    assert pixel32(device.read_bytes(), 32, 3, 2) == (0, 0, 255, 255)
    guard.close()
    assert set(device.read_bytes()) == {0}  # closed: blanked


def test_a_screen_that_fails_while_showing_is_reported_and_reopened(tmp_path: Path) -> None:
    plug_fb(tmp_path, "simple", (8, 4), 32)
    clock = Clock()
    device, sysfs = fb_paths(tmp_path)
    spec = DisplaySpec(kind="framebuffer")
    guard = open_display(spec, sysfs_root=sysfs.parent, device=device)
    assert guard is not None
    guard.retry_s, guard._clock = 2.0, clock  # the test's clock
    with guard:
        guard.write(frame_of(BLUE))
        first = guard.screen
        assert isinstance(first, FramebufferSink) and guard.problem == ""
        first.recheck_s = 0.0  # look at the device on every frame
        unplug_fb(tmp_path)  # the screen goes away (unplugged, or its driver unbound)
        guard.write(frame_of(RED))
        assert guard.screen is None and first.closed
        assert guard.problem.startswith(f"framebuffer {device} failed: ")
        assert "cannot be opened" in guard.problem
        guard.write(frame_of(RED))
        assert guard.frames_written == 3  # the mirror's frames go on, shown or not
        plug_fb(tmp_path, "vc4drmfb", (8, 4), 32)
        clock.now += 2.0
        guard.write(frame_of(RED))
        assert showing(guard) is not None and showing(guard) is not first
        assert guard.problem == "" and guard.opened == 2
        assert pixel32(device.read_bytes(), 32, 0, 0) == (0, 0, 255, 255)


def test_an_sdl_display_that_cannot_start_is_retried_until_its_driver_works(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """KMSDRM without DRM master (a desktop on the screen) fails SDL's video init as a
    driver that is not there does: the mirror runs on, and shows once SDL starts."""
    if importlib.util.find_spec("pygame") is None:
        pytest.skip("pygame is not installed (the display extra)")
    monkeypatch.setenv("SDL_VIDEODRIVER", "kmsdrm")  # no DRM device on this machine
    clock = Clock()
    guard = open_display(DisplaySpec(kind="sdl", fullscreen=False, resolution="160x120"))
    assert guard is not None
    guard._clock = clock
    with guard:
        assert guard.screen is None
        assert guard.problem.startswith("SDL display cannot start with driver kmsdrm: ")
        guard.write(frame_of(BLUE))
        monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")  # the desktop stopped: DRM is free
        clock.now += guard.retry_s
        guard.write(frame_of(BLUE))
        screen = showing(guard)
        assert isinstance(screen, SdlSink)
        assert guard.problem == "" and screen.frames_written == 1
        surface = screen._pygame.display.get_surface()
        assert tuple(surface.get_at((80, 60)))[:3] == (0, 0, 255)  # blue, as RGB
    assert guard.frames_written == 2
