"""Real, complete PNG files of huge sizes that stay small on disk (for pixel-limit tests)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def write_blank_png(path: Path, width: int, height: int) -> Path:
    """A valid 1-bit greyscale PNG of ``width`` x ``height``, all black, every row present.

    30000 x 30000 is about 110 kB on disk and decodes to gigabytes: written
    row by row through a zlib stream, it never needs more than one row here.
    """
    row = b"\0" * (1 + (width + 7) // 8)  # filter byte 0 + the packed pixels
    packer = zlib.compressobj(9)
    parts = []
    for _ in range(height):
        parts.append(packer.compress(row))
    parts.append(packer.flush())
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", b"".join(parts))
        + _chunk(b"IEND", b"")
    )
    return path
