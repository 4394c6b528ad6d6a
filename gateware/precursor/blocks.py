"""The blocks from other parts of the gateware that the simulated Precursor carries, each a
function `fn(soc)` that adds it at the addresses map.py pins (PAGE_LOCS, REGIONS, IRQS), and
the source directories they are built from (part of the build cache key).

Empty until the TRNG's register pages and the engine's Wishbone adapter are on main."""

from __future__ import annotations

from pathlib import Path

GATEWARE = Path(__file__).resolve().parents[1]

# fn(soc) for each block, in order
ALL: list = []
# gateware/ subdirectories whose Python sources define those blocks
SOURCE_DIRS: list = []


def sources() -> list:
    out = []
    for d in SOURCE_DIRS:
        out += sorted(p for p in (GATEWARE / d).glob("*.py"))
    return out
