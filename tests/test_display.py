"""Screen sinks: the framebuffer against a fake /dev/fb0 and sysfs, SDL on the dummy driver.

The fake framebuffer is a plain file of stride x height bytes beside a
directory holding ``virtual_size``, ``bits_per_pixel`` and ``stride``; a
pixel's bytes are read back at ``y * stride + x * bytes_per_pixel``.
"""

from __future__ import annotations

import errno
import importlib.util
import logging
import struct
from pathlib import Path

import numpy as np
import pytest

from appliance.device.catalog import load_profiles
from appliance.device.profile import DisplaySpec
from appliance.errors import MissingExtraError, OutputError
from appliance.media.display import open_display, screen_sink
from appliance.media.fb_ioctl import FBIOGET_FSCREENINFO, FBIOGET_VSCREENINFO
from appliance.media.framebuffer_sink import FramebufferSink, bgr_to_rgb565
from appliance.media.frames import Frame
from appliance.media.null_sink import NullSink
from appliance.media.overlays import FirstBootInfo, Overlays, ScreenTexts
from appliance.media.screen_feed import ScreenFeed
from appliance.media.screen_guard import ScreenGuard
from appliance.modelstore import ModelStore
from tests.waiting import wait_for

WIDTH, HEIGHT = 8, 4


def fake_fb(
    tmp_path: Path, bpp: int, stride: int, size: tuple[int, int] = (WIDTH, HEIGHT)
) -> tuple[Path, Path]:
    sysfs = tmp_path / "sys" / "fb0"
    sysfs.mkdir(parents=True)
    (sysfs / "virtual_size").write_text(f"{size[0]},{size[1]}\n")
    (sysfs / "bits_per_pixel").write_text(f"{bpp}\n")
    (sysfs / "stride").write_text(f"{stride}\n")
    device = tmp_path / "fb0"
    device.write_bytes(b"\xaa" * (stride * size[1]))
    return device, sysfs


def frame_of(image: np.ndarray) -> Frame:
    return Frame(image=image, index=0, capture_ns=0)


def marked_image() -> np.ndarray:
    """An 8x4 BGR image: grey, with known colours at three pixels."""
    image = np.full((HEIGHT, WIDTH, 3), 100, np.uint8)
    image[0, 0] = (255, 0, 0)  # blue, top left
    image[1, 7] = (0, 0, 255)  # red, right edge of the second line
    image[3, 2] = (16, 128, 248)  # a mix, bottom line
    return image


def pixel32(data: bytes, stride: int, x: int, y: int) -> tuple[int, ...]:
    offset = y * stride + x * 4
    return tuple(data[offset : offset + 4])


def pixel16(data: bytes, stride: int, x: int, y: int) -> int:
    offset = y * stride + x * 2
    return int.from_bytes(data[offset : offset + 2], "little")


def rgb565(r: int, g: int, b: int) -> int:
    return ((r >> 3) << 11) | ((g >> 2) << 5) | (b >> 3)


@pytest.mark.parametrize("stride", [WIDTH * 4, WIDTH * 4 + 24])
def test_xrgb8888_pixels_land_as_b_g_r_x_at_their_offsets(tmp_path: Path, stride: int) -> None:
    device, sysfs = fake_fb(tmp_path, 32, stride)
    sink = FramebufferSink(device, sysfs_dir=sysfs)
    with sink:
        assert sink.size == (WIDTH, HEIGHT)
        sink.write(frame_of(marked_image()))
        data = device.read_bytes()
        assert pixel32(data, stride, 0, 0) == (255, 0, 0, 255)
        assert pixel32(data, stride, 7, 1) == (0, 0, 255, 255)
        assert pixel32(data, stride, 2, 3) == (16, 128, 248, 255)
        assert pixel32(data, stride, 4, 2) == (100, 100, 100, 255)
        if stride > WIDTH * 4:  # the padding after each line is left alone
            assert data[WIDTH * 4 : stride] == b"\xaa" * (stride - WIDTH * 4)
    assert sink.frames_written == 1
    blank = device.read_bytes()
    assert all(value == 0 for value in blank)  # stop() blanks the screen


@pytest.mark.parametrize("stride", [WIDTH * 2, WIDTH * 2 + 6])
def test_rgb565_pixels_land_little_endian_with_red_on_top(tmp_path: Path, stride: int) -> None:
    device, sysfs = fake_fb(tmp_path, 16, stride)
    with FramebufferSink(device, sysfs_dir=sysfs) as sink:
        sink.write(frame_of(marked_image()))
        data = device.read_bytes()
    assert pixel16(data, stride, 0, 0) == 0x001F  # blue: the low five bits
    assert pixel16(data, stride, 7, 1) == 0xF800  # red: the top five bits
    assert pixel16(data, stride, 2, 3) == rgb565(248, 128, 16)
    assert data[stride * 1 + 7 * 2 : stride * 1 + 8 * 2] == b"\x00\xf8"  # little-endian bytes


def test_a_frame_is_letterboxed_and_can_be_flipped(tmp_path: Path) -> None:
    device, sysfs = fake_fb(tmp_path, 32, 16 * 4, size=(16, 4))
    image = np.zeros((4, 8, 3), np.uint8)
    image[:, 0] = (0, 255, 0)  # a green left column
    with FramebufferSink(device, sysfs_dir=sysfs, flip=True) as sink:
        sink.write(frame_of(image))
        data = device.read_bytes()
    assert pixel32(data, 64, 0, 0) == (0, 0, 0, 255)  # black bar on the left
    assert pixel32(data, 64, 3, 0) == (0, 0, 0, 255)
    assert pixel32(data, 64, 11, 1) == (0, 255, 0, 255)  # the flipped left column: x = 4 + 7
    assert pixel32(data, 64, 12, 1) == (0, 0, 0, 255)


def test_rgb565_conversion_matches_the_bit_layout() -> None:
    image = np.array([[[0, 0, 255], [0, 255, 0], [255, 0, 0], [255, 255, 255]]], np.uint8)
    assert bgr_to_rgb565(image).tolist() == [[0xF800, 0x07E0, 0x001F, 0xFFFF]]


def test_unsupported_depth_and_missing_device_are_one_clear_error(tmp_path: Path) -> None:
    device, sysfs = fake_fb(tmp_path, 24, WIDTH * 3)
    with pytest.raises(OutputError, match="24 bits per pixel"):
        FramebufferSink(device, sysfs_dir=sysfs).start()
    (sysfs / "bits_per_pixel").write_text("32")
    (sysfs / "stride").write_text(str(WIDTH * 4))
    with pytest.raises(OutputError, match="cannot be opened"):
        FramebufferSink(tmp_path / "nothing", sysfs_dir=sysfs).start()


class DoubleBufferKernel:
    """A kernel answering the fb ioctls as a double-buffering driver does (linux/fb.h layouts).

    The visible screen is 1280x800 at 32 bpp with padded lines; the virtual one
    is twice as tall (``yres_virtual`` 1600), which is what sysfs ``virtual_size``
    reports. ``yoffset`` is the line the display is panned to.
    """

    XRES, YRES, YRES_VIRTUAL, LINE_LENGTH = 1280, 800, 1600, 1280 * 4 + 256

    def __init__(self, yoffset: int = 0) -> None:
        self.yoffset = yoffset
        self.requests: list[int] = []

    def __call__(self, fd: int, request: int, buffer: bytearray) -> int:
        self.requests.append(request)
        if request == FBIOGET_VSCREENINFO:
            var = [0] * 40  # 40 __u32
            var[:8] = [self.XRES, self.YRES, self.XRES, self.YRES_VIRTUAL, 0, self.yoffset, 32, 0]
            struct.pack_into("=40I", buffer, 0, *var)
        elif request == FBIOGET_FSCREENINFO:
            # id[16], unsigned long smem_start, smem_len, type, type_aux, visual,
            # xpanstep, ypanstep, ywrapstep, line_length, ... (native alignment)
            struct.pack_into(
                "@16sL4I3HI",
                buffer,
                0,
                b"simulated-drm",
                0,
                self.LINE_LENGTH * self.YRES_VIRTUAL,
                0,
                0,
                2,
                1,
                1,
                0,
                self.LINE_LENGTH,
            )
        else:
            raise OSError(errno.ENOTTY, "Inappropriate ioctl for device")
        return 0


@pytest.mark.parametrize("yoffset", [0, 800])
def test_the_visible_size_comes_from_the_kernel_not_virtual_size(
    tmp_path: Path, yoffset: int
) -> None:
    kernel = DoubleBufferKernel(yoffset)
    stride, visible, virtual = kernel.LINE_LENGTH, kernel.YRES, kernel.YRES_VIRTUAL
    device, sysfs = fake_fb(tmp_path, 32, stride, size=(kernel.XRES, virtual))
    image = np.full((visible, kernel.XRES, 3), 100, np.uint8)
    image[0, 0] = (255, 0, 0)  # top left of the visible screen
    image[visible - 1, kernel.XRES - 1] = (0, 0, 255)  # its bottom right
    with FramebufferSink(device, sysfs_dir=sysfs, ioctl=kernel) as sink:
        assert sink.size == (1280, 800)  # not virtual_size's 1280x1600
        assert kernel.requests == [FBIOGET_VSCREENINFO, FBIOGET_FSCREENINFO]
        sink.write(frame_of(image))
        data = device.read_bytes()
    top, bottom = yoffset, yoffset + visible - 1
    assert pixel32(data, stride, 0, top) == (255, 0, 0, 255)
    assert pixel32(data, stride, 1279, bottom) == (0, 0, 255, 255)
    assert pixel32(data, stride, 640, top + 400) == (100, 100, 100, 255)  # no letterbox bars
    assert data[top * stride + 1280 * 4 : (top + 1) * stride] == b"\xaa" * 256  # padding kept
    other = range(visible, virtual) if yoffset == 0 else range(0, yoffset)
    assert data[other[0] * stride : (other[-1] + 1) * stride] == b"\xaa" * (len(other) * stride)


def test_a_plain_file_answers_no_ioctl_and_sysfs_is_read(tmp_path: Path) -> None:
    # The fake fb0 of the other tests: the kernel's ioctl fails with ENOTTY on a file.
    device, sysfs = fake_fb(tmp_path, 32, WIDTH * 4 + 8)
    with FramebufferSink(device, sysfs_dir=sysfs) as sink:
        assert sink.size == (WIDTH, HEIGHT)
        assert sink.geometry is not None and sink.geometry.source == "sysfs"
        assert sink.geometry.stride == WIDTH * 4 + 8
        sink.write(frame_of(marked_image()))
        assert pixel32(device.read_bytes(), WIDTH * 4 + 8, 7, 1) == (0, 0, 255, 255)


def test_a_kernel_depth_the_sink_cannot_draw_is_one_clear_error(tmp_path: Path) -> None:
    def kernel_24bpp(fd: int, request: int, buffer: bytearray) -> int:
        DoubleBufferKernel()(fd, request, buffer)
        if request == FBIOGET_VSCREENINFO:
            struct.pack_into("=I", buffer, 6 * 4, 24)
        return 0

    device, sysfs = fake_fb(tmp_path, 32, WIDTH * 4)
    with pytest.raises(OutputError, match="24 bits per pixel"):
        FramebufferSink(device, sysfs_dir=sysfs, ioctl=kernel_24bpp).start()


@pytest.mark.parametrize("name", ["jetson-orin-nano", "jetson-xavier-nx"])
def test_jetson_profiles_show_through_sdl_on_kms(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # L4T 35.4 and later (JetPack 6) have no /dev/fb0: the framebuffer would mean no screen.
    profile = load_profiles()[name]
    assert profile.display.kind == "sdl"
    if importlib.util.find_spec("pygame") is None:
        pytest.skip("pygame is not installed (the display extra)")
    from appliance.media.sdl_sink import DEFAULT_DRIVER, SdlSink

    sink = screen_sink(profile.display)
    assert isinstance(sink, SdlSink) and sink.fullscreen
    assert DEFAULT_DRIVER == "kmsdrm"
    monkeypatch.setenv("SDL_VIDEODRIVER", "unset")  # so the test's end restores the old value
    monkeypatch.delenv("SDL_VIDEODRIVER")
    try:
        sink.start()  # no KMS device here: a clear error naming the driver
    except OutputError as exc:
        assert "kmsdrm" in str(exc)
    else:
        assert sink.driver == "kmsdrm"
        sink.stop()


def test_open_display_picks_the_framebuffer_or_runs_headless(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    device, sysfs = fake_fb(tmp_path, 32, WIDTH * 4)
    spec = DisplaySpec(kind="framebuffer")
    sink = screen_sink(spec, sysfs_root=sysfs.parent, device=str(device))
    assert isinstance(sink, FramebufferSink)
    guarded = open_display(spec, sysfs_root=sysfs.parent, device=str(device))
    assert isinstance(guarded, ScreenGuard)
    with guarded:
        assert isinstance(guarded.screen, FramebufferSink) and not guarded.problem
    assert open_display(DisplaySpec(kind="none")) is None  # no screen asked: nothing missing
    assert open_display(DisplaySpec(connector="headless")) is None
    with pytest.raises(OutputError, match="not found"):
        screen_sink(spec, sysfs_root=sysfs.parent, device=str(tmp_path / "fb7"))
    missing = open_display(spec, sysfs_root=sysfs.parent, device=str(tmp_path / "fb7"))
    assert missing is not None
    with caplog.at_level(logging.WARNING), missing:  # starts: the mirror runs on without it
        missing.write(frame_of(marked_image()))
        assert missing.screen is None and "fb7 not found" in missing.problem
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "headless" in warnings[0].getMessage()


def test_sdl_sink_shows_frames_on_the_dummy_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("pygame") is None:
        pytest.skip("pygame is not installed (the display extra)")
    from appliance.media.sdl_sink import SdlSink

    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    image = np.zeros((60, 80, 3), np.uint8)
    image[:, :40] = (255, 0, 0)  # left half blue
    image[:, 40:] = (0, 0, 255)  # right half red
    sink = SdlSink(fullscreen=False, size=(160, 120))
    with sink:
        assert sink.driver == "dummy"
        assert sink.size == (160, 120)
        sink.write(frame_of(image))
        pygame = sink._pygame
        surface = pygame.display.get_surface()
        assert tuple(surface.get_at((10, 60)))[:3] == (0, 0, 255)  # RGB: blue on the left
        assert tuple(surface.get_at((150, 60)))[:3] == (255, 0, 0)  # red on the right
    assert sink.frames_written == 1
    assert not pygame.display.get_init()  # stop() let the display go


def test_open_display_gives_an_sdl_sink_when_asked() -> None:
    if importlib.util.find_spec("pygame") is None:
        with pytest.raises(MissingExtraError, match="pygame"):
            screen_sink(DisplaySpec(kind="sdl"))
    else:
        assert type(screen_sink(DisplaySpec(kind="sdl"))).__name__ == "SdlSink"
    assert isinstance(open_display(DisplaySpec(kind="sdl")), ScreenGuard)


@pytest.fixture(scope="module")
def overlays(store: ModelStore) -> Overlays:
    return Overlays(store.path("label_font"))


def test_screens_are_bgr_images_with_text_in_the_middle(overlays: Overlays) -> None:
    info = FirstBootInfo("192.168.1.23", "https://192.168.1.23:8443/admin", "tiger-42-maple")
    for screen in (
        overlays.idle_screen((640, 360)),
        overlays.camera_lost_screen((640, 360)),
        overlays.first_boot_screen((640, 360), info),
    ):
        assert screen.shape == (360, 640, 3) and screen.dtype == np.uint8
        bright = screen.max(axis=2) > 200
        assert bright.any()
        ys, xs = np.nonzero(bright)
        assert 60 < ys.mean() < 300 and 160 < xs.mean() < 480  # centred text
        assert not bright[:20].any()  # margins stay background


def test_screens_are_localisable_and_cached_copies(store: ModelStore) -> None:
    chinese = Overlays(store.path("label_font"), ScreenTexts(idle="请靠近一点"))
    english = Overlays(store.path("label_font"))
    a = chinese.idle_screen((320, 180))
    assert not np.array_equal(a, english.idle_screen((320, 180)))
    a[:] = 0  # callers may draw on what they get
    assert chinese.idle_screen((320, 180)).any()


def test_screen_feed_shows_a_screen_until_hidden(overlays: Overlays) -> None:
    sink = NullSink()
    sink.start()
    with ScreenFeed([sink], period_s=0.01) as feed:
        feed.show(overlays.camera_lost_screen((64, 48)))
        assert wait_for(lambda: sink.frames_written >= 3)
        feed.hide()
        after = sink.frames_written
        assert not feed.showing
    assert sink.frames_written == after  # nothing written once hidden
    sink.close()
