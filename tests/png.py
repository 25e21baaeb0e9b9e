"""A small pure-Python PNG reader: enough to look at a browser's screenshot in a test.

Reads 8-bit truecolour (RGB) and truecolour-with-alpha (RGBA) images, non-interlaced, as
chromium writes them; anything else is a ValueError, never a wrong picture.
"""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass
class Image:
    width: int
    height: int
    rows: list[bytes]  # RGB, 3 bytes a pixel

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        row = self.rows[y]
        return row[3 * x], row[3 * x + 1], row[3 * x + 2]

    def histogram(self, step: int = 1) -> Counter[tuple[int, int, int]]:
        counts: Counter[tuple[int, int, int]] = Counter()
        for row in self.rows[::step]:
            counts.update(zip(row[0::3], row[1::3], row[2::3], strict=True))
        return counts

    def distinct_colours(self, step: int = 1) -> set[tuple[int, int, int]]:
        return set(self.histogram(step))

    def count(self, rgb: tuple[int, int, int], tolerance: int = 6) -> int:
        """Pixels within `tolerance` of a colour in every channel (antialiasing, colour
        management)."""
        return sum(
            n
            for colour, n in self.histogram().items()
            if all(abs(a - b) <= tolerance for a, b in zip(colour, rgb, strict=True))
        )


def read(data: bytes) -> Image:
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG")
    offset, chunks = len(SIGNATURE), []
    width = height = channels = 0
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset : offset + 8])
        body = data[offset + 8 : offset + 8 + length]
        offset += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"unsupported PNG: depth {depth}, colour {colour}")
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            chunks.append(body)
        elif kind == b"IEND":
            break
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        row = _unfilter(
            raw[start], bytearray(raw[start + 1 : start + 1 + stride]), previous, channels
        )
        previous = row
        if channels == 4:
            rgb = bytearray(width * 3)
            rgb[0::3], rgb[1::3], rgb[2::3] = row[0::4], row[1::4], row[2::4]
            rows.append(bytes(rgb))
        else:
            rows.append(bytes(row))
    return Image(width, height, rows)


def _unfilter(kind: int, row: bytearray, above: bytearray, bpp: int) -> bytearray:
    if kind == 0:
        return row
    if kind == 2:
        return bytearray((a + b) & 0xFF for a, b in zip(row, above, strict=True))
    for i in range(len(row)):
        left = row[i - bpp] if i >= bpp else 0
        if kind == 1:
            row[i] = (row[i] + left) & 0xFF
        elif kind == 3:
            row[i] = (row[i] + (left + above[i]) // 2) & 0xFF
        elif kind == 4:
            up, corner = above[i], above[i - bpp] if i >= bpp else 0
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
            row[i] = (row[i] + pred) & 0xFF
        else:
            raise ValueError(f"bad PNG filter {kind}")
    return row
