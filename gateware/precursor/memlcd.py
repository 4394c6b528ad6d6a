"""The simulated Precursor's screen: the memory LCD's panel rebuilt from the lines the memlcd
block sent (peripherals.MemLCD; the simulator appends each to `memlcd.log`, run.py --memlcd
copies it out), and written as a PNG.

    python -m precursor.memlcd LOG --png OUT.png [--at CYCLE] [--scale N]

The panel starts light (as the graphics server clears it); every line sent replaces that
line. `--at` shows the panel as it was at a cycle (default: after the last line sent).
Pixel x of a line is bit x % 32 of word x // 32, 1 = light, 0 = dark (docs/sim.md).
"""

from __future__ import annotations

import argparse
import re
import struct
import sys
import zlib
from pathlib import Path

LINES = 536
WIDTH = 336
WORDS_PER_LINE = 11
_LINE = re.compile(r"^(\d+) (\d+) ([0-9a-f]{88})$")


class BadLog(ValueError):
    pass


def parse(text: str) -> list[tuple[int, int, list[int]]]:
    """(cycle, line, words 0..10) per sent line, in order; a malformed line is refused with its
    number (a last line cut short by a killed simulator is dropped)."""
    out = []
    rows = text.split("\n")
    for i, row in enumerate(rows):
        if not row:
            continue
        m = _LINE.match(row)
        if not m:
            if i == len(rows) - 1:
                break           # cut short: the simulator was killed while writing it
            raise BadLog(f"memlcd log line {i + 1}: malformed: {row[:100]!r}")
        cycle, line, data = int(m.group(1)), int(m.group(2)), int(m.group(3), 16)
        if line >= LINES:
            raise BadLog(f"memlcd log line {i + 1}: line {line} is outside the panel (0..{LINES - 1})")
        out.append((cycle, line, [(data >> (32 * w)) & 0xFFFF_FFFF for w in range(WORDS_PER_LINE)]))
    return out


def panel(records, at: int | None = None) -> list[list[int]]:
    """The panel (LINES rows of WIDTH pixels, 1 = light) after every line sent up to cycle
    `at` (all of them when None)."""
    img = [[1] * WIDTH for _ in range(LINES)]
    for cycle, line, words in records:
        if at is not None and cycle > at:
            break
        img[line] = [(words[x // 32] >> (x % 32)) & 1 for x in range(WIDTH)]
    return img


def png(img: list[list[int]], scale: int = 1) -> bytes:
    """A 1-bit greyscale PNG of the panel (1 = white)."""
    h, w = len(img), len(img[0])
    raw = bytearray()
    for row in img:
        px = [p for p in row for _ in range(scale)]
        packed = bytearray((w * scale + 7) // 8)
        for x, p in enumerate(px):
            if p:
                packed[x // 8] |= 0x80 >> (x % 8)
        for _ in range(scale):
            raw += b"\x00" + packed

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFF_FFFF)

    ihdr = struct.pack(">IIBBBBB", w * scale, h * scale, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + chunk(b"IEND", b"")


def read_png(data: bytes) -> list[list[int]]:
    """The pixels of a PNG written by `png` (scale 1): the inverse, for tests."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = (w + 7) // 8 + 1
    return [[(raw[y * stride + 1 + x // 8] >> (7 - x % 8)) & 1 for x in range(w)] for y in range(h)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log", type=Path, help="the memlcd panel log (run.py --memlcd)")
    ap.add_argument("--png", type=Path, required=True, help="write the screen here")
    ap.add_argument("--at", type=int, help="the panel as it was at this cycle (default: the end)")
    ap.add_argument("--scale", type=int, default=1, help="pixels per LCD pixel (1..8, default 1)")
    a = ap.parse_args(argv)
    if not 1 <= a.scale <= 8:
        print(f"precursor.memlcd: --scale {a.scale}: expected 1..8", file=sys.stderr)
        return 2
    try:
        records = parse(a.log.read_text())
    except (OSError, BadLog) as e:
        print(f"precursor.memlcd: {e}", file=sys.stderr)
        return 2
    a.png.write_bytes(png(panel(records, a.at), a.scale))
    sent = sum(1 for c, _, _ in records if a.at is None or c <= a.at)
    print(f"precursor.memlcd: {a.png}: {WIDTH} x {LINES} (x{a.scale}), {sent} line(s) sent so far", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
