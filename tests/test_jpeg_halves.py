"""A JPEG with restart markers is cut in two (``media.jpeg_restarts``) and decoded
in two halves at once (``media.jpeg_halves``), to the very pixels of a whole
decode; anything that cannot be cut is decoded whole, as before.

Real libjpeg-turbo (OpenCV's encoder, simplejpeg's decoder) on the demo photo;
the camera frames are real clip frames when ``../shared/media`` is there.
"""

from __future__ import annotations

import itertools
import os
import struct
import threading

import cv2
import numpy as np
import pytest
import simplejpeg

from appliance.inference.spread import current_cpu
from appliance.media import jpeg_halves
from appliance.media.jpeg import decode_jpeg
from appliance.media.jpeg_halves import HalvesDecoder
from appliance.media.jpeg_restarts import cut_top, split
from appliance.tools.live_clip import JpegClip, LiveClipSource
from tests.conftest import media_frames, shared_media

HD = (1280, 720)


def encode(image: np.ndarray, interval: int | None = None, **extra: int) -> bytes:
    """``image`` as OpenCV writes it, with a restart marker every ``interval`` MCUs."""
    params = [cv2.IMWRITE_JPEG_QUALITY, 90]
    if interval is not None:
        params += [cv2.IMWRITE_JPEG_RST_INTERVAL, interval]
    for key, value in extra.items():
        params += [getattr(cv2, key), value]
    ok, data = cv2.imencode(".jpg", image, params)
    assert ok
    return data.tobytes()


def per_row(width: int, mcu: int = 16) -> int:
    return -(-width // mcu)


def strict_halves(data: bytes, colorspace: str = "BGR") -> tuple[np.ndarray, int]:
    """``data`` decoded from its two halves (strictly: a wrong ``RSTn`` number or a cut
    mid-interval raises), and the top's rows."""
    halves = split(data)
    assert halves is not None
    whole = simplejpeg.decode_jpeg(data, colorspace=colorspace, fastupsample=True)
    out = np.empty_like(whole)
    top, bottom = out[: halves.top_rows], out[halves.top_rows :]
    for part, rows in ((halves.top, top), (halves.bottom, bottom)):
        simplejpeg.decode_jpeg(part, colorspace=colorspace, fastupsample=True, buffer=rows)
    assert (halves.width, halves.height) == (whole.shape[1], whole.shape[0])
    return out, halves.top_rows


@pytest.fixture(scope="module")
def photo(astronaut: np.ndarray) -> np.ndarray:
    return cv2.resize(astronaut, HD, interpolation=cv2.INTER_CUBIC)


@pytest.mark.parametrize(
    ("size", "rows_per_interval", "top"),
    [
        (HD, 1, 352),  # 45 MCU rows: cut after 22
        ((640, 480), 1, 240),  # 30 rows: cut after 15, the markers below renumbered
        ((1920, 1080), 2, 544),  # 68 rows (the last one partial), a marker every 2
        ((333, 251), 1, 128),  # sizes that are no multiple of an MCU
    ],
)
def test_the_halves_decode_to_the_whole_pictures_pixels(
    photo: np.ndarray, size: tuple[int, int], rows_per_interval: int, top: int
) -> None:
    image = cv2.resize(photo, size)
    data = encode(image, per_row(size[0]) * rows_per_interval)
    out, top_rows = strict_halves(data)
    assert top_rows == top
    assert np.array_equal(out, decode_jpeg(data))


def test_an_interval_of_part_of_a_row_is_cut_where_one_ends_with_a_row(
    photo: np.ndarray,
) -> None:
    data = encode(photo, 16)  # 80 MCUs a row: every 5th interval ends a row
    out, top_rows = strict_halves(data)
    assert top_rows % 16 == 0 and abs(top_rows - 360) <= 16
    assert np.array_equal(out, decode_jpeg(data))


def test_a_grey_jpeg_is_cut_by_its_8_pixel_rows(photo: np.ndarray) -> None:
    grey = cv2.cvtColor(photo, cv2.COLOR_BGR2GRAY)
    data = encode(grey, per_row(HD[0], 8))
    out, top_rows = strict_halves(data, colorspace="GRAY")
    assert top_rows == 360
    assert np.array_equal(out, simplejpeg.decode_jpeg(data, colorspace="GRAY"))


def test_the_cut_follows_the_share_asked_for(photo: np.ndarray) -> None:
    data = encode(photo, per_row(HD[0]))
    rows = [cut.top_rows for s in (0.2, 0.5, 0.8) if (cut := cut_top(data, s)) is not None]
    assert rows == [16 * 9, 16 * 22, 16 * 36]  # of 45 MCU rows (the middle: 22 of 22.5)


def test_what_cannot_be_cut_is_none(photo: np.ndarray) -> None:
    plain = encode(photo)
    restarts = encode(photo, per_row(HD[0]))
    progressive = encode(photo, per_row(HD[0]), IMWRITE_JPEG_PROGRESSIVE=1)
    assert split(plain) is None  # no restart interval
    assert split(progressive) is None  # many scans
    assert split(restarts[: len(restarts) // 2]) is None  # cut short: the markers do not add up
    assert split(restarts[: len(restarts) // 4]) is None  # cut short above the middle
    assert cut_top(restarts, min_pixels=HD[0] * HD[1] + 1) is None  # too small to bother
    assert split(b"not a jpeg") is None and split(b"\xff\xd8" + bytes(200)) is None
    sos = restarts.index(b"\xff\xda")
    second_scan = restarts[:-2] + restarts[sos:]  # another scan after the first
    assert split(second_scan) is None


def test_a_frame_damaged_below_the_cut_is_caught_by_the_bottom(photo: np.ndarray) -> None:
    data = encode(photo, per_row(HD[0]))
    cut = cut_top(data)
    assert cut is not None
    last = data.rindex(b"\xff\xd5")  # a restart marker near the end, dropped
    damaged = data[:last] + data[last + 2 :]
    assert cut_top(damaged) is not None  # the top is whole
    assert cut.bottom(damaged) is None and split(damaged) is None


def test_the_decoder_decodes_a_large_frame_in_halves(photo: np.ndarray) -> None:
    data = encode(photo, per_row(HD[0]))
    decoder = HalvesDecoder()
    try:
        images = [decoder.decode(data), decoder.decode(np.frombuffer(data, np.uint8)[None])]
        assert (decoder.halves, decoder.whole) == (2, 0)
        for image in images:
            assert image is not None and image.flags.writeable
            assert np.array_equal(image, decode_jpeg(data))
        helper = decoder._thread
        assert helper is not None and helper.name == "jpeg" and helper.is_alive()
    finally:
        decoder.close()
    helper.join(1.0)
    assert not helper.is_alive()  # closed: its thread ended
    assert np.array_equal(decoder.decode(data), decode_jpeg(data))
    assert decoder.whole == 1  # after close, whole


def test_what_the_decoder_cannot_cut_it_decodes_whole(photo: np.ndarray) -> None:
    small = encode(cv2.resize(photo, (640, 480)), per_row(640))  # cut costs more than it saves
    plain = encode(photo)
    restarts = encode(photo, per_row(HD[0]))
    last = restarts.rindex(b"\xff\xd5")
    damaged = restarts[:last] + restarts[last + 2 :]  # found out by the helper
    truncated = restarts[: len(restarts) // 2]
    with_decoder = HalvesDecoder()
    try:
        for data in (small, plain, damaged, truncated, b"not a jpeg"):
            ours, theirs = with_decoder.decode(data), decode_jpeg(data)
            assert (ours is None) == (theirs is None)
            assert ours is None or np.array_equal(ours, theirs)
        assert with_decoder.halves == 0 and with_decoder.whole == 5
    finally:
        with_decoder.close()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_the_helper_runs_off_the_callers_cpu_and_a_one_cpu_caller_has_none(
    photo: np.ndarray,
) -> None:
    data = encode(photo, per_row(HD[0]))
    decoder = HalvesDecoder()
    seen: dict[str, object] = {}

    def held_to(cpus: set[int]) -> None:
        os.sched_setaffinity(0, cpus)
        seen["image"] = decoder.decode(data)

    try:
        assert decoder.decode(data) is not None
        cpu = current_cpu()
        helper = decoder._thread
        assert helper is not None and helper.native_id is not None
        if cpu is not None:  # where it last was: the helper may use any CPU but that
            assert cpu not in os.sched_getaffinity(helper.native_id)
        one = threading.Thread(target=held_to, args=({min(os.sched_getaffinity(0))},))
        one.start()
        one.join()
        assert np.array_equal(seen["image"], decode_jpeg(data))
        assert (decoder.halves, decoder.whole) == (1, 1)
    finally:
        decoder.close()


def test_the_callers_share_moves_to_where_both_halves_end_together(
    photo: np.ndarray,
) -> None:
    data = encode(photo, per_row(HD[0]))
    decoder = HalvesDecoder()
    try:
        shares = []
        for _ in range(20):
            decoder.decode(data)
            shares.append(decoder.share)
    finally:
        decoder.close()
    low, high = jpeg_halves.SHARE_RANGE
    assert all(low <= s <= high for s in shares)
    assert len(set(shares)) > 1  # it moved
    step = jpeg_halves.SHARE_STEP
    moves = itertools.pairwise(shares)
    assert all(abs(b - a) == pytest.approx(step) or b in (low, high) for a, b in moves)


def test_a_camera_clip_carries_restarts_and_is_read_in_halves() -> None:
    shared_media("expressive_woman.mp4")  # skips without ../shared/media
    clip = JpegClip.from_images(media_frames("expressive_woman.mp4", 6, HD))
    (interval,) = struct.unpack(">H", clip.jpeg(0)[clip.jpeg(0).index(b"\xff\xdd") + 4 :][:2])
    assert interval == per_row(HD[0])  # a marker after every MCU row
    with LiveClipSource(clip, fps=60) as source:
        frames = [source.read(1.0) for _ in range(len(clip))]
        decoder = source.decoder
    assert decoder.halves == len(clip) and decoder.whole == 0
    for frame in frames:
        assert frame is not None
        assert np.array_equal(frame.image, clip.decode(frame.index))
        assert frame.timings_ms["decode"] > 0


def test_a_clip_played_without_restarts_is_decoded_whole(photo: np.ndarray) -> None:
    """``mirror bench --no-restarts``: a camera whose JPEGs carry no markers."""
    clip = JpegClip.from_images([photo, photo])
    with LiveClipSource(clip, fps=60, restarts=False) as source:
        frames = [source.read(1.0) for _ in range(len(clip))]
        decoder = source.decoder
    assert decoder.halves == 0
    for frame in frames:
        assert frame is not None and np.array_equal(frame.image, clip.decode(frame.index))
