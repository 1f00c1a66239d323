"""Cutting a JPEG with restart markers into a top and a bottom JPEG.

A baseline JPEG's pixels are one entropy-coded stream, decoded in order: one
thread's work. A JPEG with a restart interval (a ``DRI`` marker) restarts that
stream every few MCUs: an ``RSTn`` marker, and the DC predictions start over,
so each interval decodes without the ones before it. Many MJPG webcams emit
them (the Logitech C920 among them, which is why RTSP relays must carry them
on: smolrtsp pull request 61).

``cut_top(data)`` finds the restart marker that ends the MCU row nearest the
middle (or another share of the rows), reading the scan only down to it, and
makes the top: the header with the height of the rows above, the scan up to
that marker and an end-of-image marker. ``Cut.bottom(data)`` reads the rest
of the scan and makes the bottom: the header with the height of the rest and
the scan after the marker, its ``RSTn`` numbers counted again from 0 (a
decoder checks them); so a helper thread can make the bottom while the
caller decodes the top. ``split(data)`` does both. Both are whole JPEGs, and
their pixels are exactly the rows of the original's decode (no decoder filter
reaches across an MCU row when the chroma is upsampled by repeating,
``media.jpeg``'s setting). Anything else (no restart interval, no marker at a
row's end, progressive or multi-scan, a damaged or cut-short frame whose
markers do not add up) gives None, and the caller decodes the JPEG whole.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass

logger = logging.getLogger(__name__)

SOI, EOI = b"\xff\xd8", b"\xff\xd9"
SOF_SEQUENTIAL = (0xC0, 0xC1)  # baseline and extended sequential, Huffman-coded
SOF_OTHER = frozenset(range(0xC2, 0xD0)) - {0xC4, 0xC8, 0xCC}  # progressive, lossless, ...
DRI, SOS = 0xDD, 0xDA
RST0 = 0xD0
RST_COUNT = 8  # RST0..RST7, then RST0 again


@dataclass(frozen=True)
class _Header:
    sof: int  # offset of the SOF marker
    width: int
    height: int
    mcu: tuple[int, int]  # (width, height) of an MCU in pixels
    interval: int  # MCUs per restart interval (0: none)
    scan: int  # offset of the entropy-coded data (just after the SOS segment)


@dataclass(frozen=True)
class Cut:
    """Where a JPEG of ``width`` x ``height`` pixels is cut: ``top`` (a whole JPEG)
    decodes to its first ``top_rows`` pixel rows; ``bottom(data)`` makes the JPEG of
    the rest."""

    top: bytes
    top_rows: int
    width: int
    height: int
    _head: _Header
    _after: int  # offset just past the restart marker at the cut
    _left: int  # restart markers expected after the cut

    def bottom(self, data: bytes) -> bytes | None:
        """The JPEG of the rows below the cut, its ``RSTn`` counted again from 0;
        None when the markers below the cut do not add up (a damaged frame)."""
        markers = _restart_markers(data, self._after)
        if markers is None or len(markers) != self._left:
            return None
        scan = bytearray(data[self._after :])
        for number, marker in enumerate(markers):
            scan[marker - self._after + 1] = RST0 + number % RST_COUNT
        return _with_height(data, self._head, self.height - self.top_rows) + scan


@dataclass(frozen=True)
class Halves:
    """A JPEG of ``width`` x ``height`` pixels cut in two: ``top`` decodes to its
    first ``top_rows`` pixel rows, ``bottom`` to the rest."""

    top: bytes
    bottom: bytes
    top_rows: int
    width: int
    height: int


def split(data: bytes) -> Halves | None:
    """``data`` cut at a restart marker near its middle, or None where it cannot be."""
    cut = cut_top(data)
    bottom = None if cut is None else cut.bottom(data)
    if cut is None or bottom is None:
        return None
    return Halves(cut.top, bottom, cut.top_rows, cut.width, cut.height)


def cut_top(data: bytes, share: float = 0.5, min_pixels: int = 0) -> Cut | None:
    """Where to cut ``data`` (at the row boundary nearest ``share`` of its rows from
    the top) and its top JPEG (reading the scan down to the cut only), or None where
    it cannot be cut or has fewer than ``min_pixels`` pixels."""
    head = _header(data)
    if head is None or head.interval <= 0 or head.width * head.height < min_pixels:
        return None
    per_row = -(-head.width // head.mcu[0])
    rows = -(-head.height // head.mcu[1])
    intervals = -(-(per_row * rows) // head.interval)
    cut = _cut(head.interval, per_row, rows, share)
    if cut is None:
        return None
    done, top_rows = cut  # intervals above the cut, MCU rows above it
    markers = _restart_markers(data, head.scan, done)
    if markers is None or len(markers) != done:
        return None  # another marker in the scan, or a frame cut short or damaged
    at = markers[-1]  # the marker ending the last interval above
    top_height = top_rows * head.mcu[1]
    return Cut(
        top=_with_height(data, head, top_height) + data[head.scan : at] + EOI,
        top_rows=top_height,
        width=head.width,
        height=head.height,
        _head=head,
        _after=at + 2,
        _left=intervals - 1 - done,
    )


def _cut(interval: int, per_row: int, rows: int, share: float) -> tuple[int, int] | None:
    """(intervals, MCU rows) above the restart boundary at a row's end nearest
    ``share`` of the rows; None when no boundary but the first and last is at a row's
    end."""
    best: tuple[int, int] | None = None
    for row in range(1, rows):
        mcus = row * per_row
        if mcus % interval:
            continue
        if best is None or abs(row - share * rows) < abs(best[1] - share * rows):
            best = (mcus // interval, row)
    return best


def _restart_markers(data: bytes, start: int, wanted: int = -1) -> list[int] | None:
    """Offsets in ``data`` of the ``RSTn`` markers of the entropy-coded data from
    ``start`` on: the first ``wanted`` of them, or (``wanted`` < 0) all of them when
    the end of image is the first other marker; None when another marker comes first.

    A loop over ``bytes.find``: a scan has few 0xFF bytes (a few hundred in a 1280x720
    frame), and it took 45 us on a frame not yet in the cache (numpy: 130 us)."""
    markers: list[int] = []
    at = data.find(0xFF, start)
    while 0 <= at < len(data) - 1 and len(markers) != wanted:
        following = data[at + 1]
        if RST0 <= following < RST0 + RST_COUNT:
            markers.append(at)
        elif following == EOI[1]:
            return markers
        elif following not in (0x00, 0xFF):  # 0xFF 0x00: a stuffed 0xFF; 0xFF 0xFF: fill
            return None  # a second scan, a DNL, ...
        at = data.find(0xFF, at + 1 + (following == 0x00))
    return markers if len(markers) == wanted else None


def _header(data: bytes) -> _Header | None:
    """The segments before the scan, read far enough to cut the scan; None where the
    JPEG is not one sequential Huffman-coded scan (or not a JPEG)."""
    if not data.startswith(SOI):
        return None
    at, sof, interval = 2, -1, 0
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte before a marker
            at += 1
            continue
        (length,) = struct.unpack_from(">H", data, at + 2)
        if marker in SOF_SEQUENTIAL:
            sof = at
        elif marker in SOF_OTHER:
            return None
        elif marker == DRI and length >= 4:
            (interval,) = struct.unpack_from(">H", data, at + 4)
        elif marker == SOS:
            return _scan_header(data, sof, interval, at + 2 + length)
        at += 2 + length
    return None


def _scan_header(data: bytes, sof: int, interval: int, scan: int) -> _Header | None:
    if sof < 0 or scan >= len(data):
        return None
    height, width, count = struct.unpack_from(">HHB", data, sof + 5)
    if height == 0 or width == 0 or count == 0 or len(data) < sof + 10 + 3 * count:
        return None
    factors = [data[sof + 10 + 3 * k + 1] for k in range(count)]
    if count == 1:  # a single component's MCU is one block, whatever its factors say
        mcu = (8, 8)
    else:
        mcu = (8 * max(f >> 4 for f in factors), 8 * max(f & 0x0F for f in factors))
    if min(mcu) == 0:
        return None
    return _Header(sof, width, height, mcu, interval, scan)


def _with_height(data: bytes, head: _Header, height: int) -> bytes:
    """The header segments of ``data`` (up to its scan) with the frame's height set."""
    return data[: head.sof + 5] + struct.pack(">H", height) + data[head.sof + 7 : head.scan]
