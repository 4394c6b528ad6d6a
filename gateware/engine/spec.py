"""The engine's spec, loaded once from spec/engine25519.toml through gateware/engine_isa.py (the
single reader). Derived values (field prime, wrap factor, clock ratio) are computed from it here,
never typed in."""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import engine_isa  # noqa: E402


@lru_cache(maxsize=None)
def load() -> "engine_isa.Spec":
    return engine_isa.load()


def const(isa: str, name: str) -> int:
    """Value of the constant ROM slot called `name` (e.g. "field" = p)."""
    s = load()
    for idx, c in s._resolve_tables(isa, 0)[1].items():
        if c["name"] == name:
            return s.isas[isa].const_rom[idx]
    raise KeyError(name)


def prime() -> int:
    return const("v1", "field")


def field_bits() -> int:
    """p = 2^n - c: n."""
    return prime().bit_length()


def wrap_factor() -> int:
    """p = 2^n - c: c (19 for Curve25519), the factor of the schoolbook wrap-around."""
    return (1 << field_bits()) - prime()


def mul_clock_ratio(isa: str) -> int:
    i = load().isas[isa]
    assert i.mul_clk_hz % i.eng_clk_hz == 0, "mul_clk must be a multiple of eng_clk"
    return i.mul_clk_hz // i.eng_clk_hz
