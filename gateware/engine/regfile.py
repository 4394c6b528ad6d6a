"""Windowed register file: 16 windows x 32 registers x 256 bits (geometry from the spec), followed
by the constant ROM's 32 slots as read-only rows (constrom.py; row `const_base` + slot), two
synchronous read ports (address in cycle t, data in cycle t + 1), three write ports: the ALU
(and bus, and CSWAP's first register), CSWAP's second register, the multipliers. A write at the
edge ending cycle t is seen by a read addressed in cycle t + 1 (distinct edges, no collision).
Writers address only the windows' rows (their addresses are 9 bits wide)."""

from __future__ import annotations

from migen import Memory, Module

from . import constrom, spec


class RegFile(Module):
    def __init__(self, isa: str):
        g = spec.load().geometry
        self.const_base = g["windows"] * g["regs_per_window"]
        assert self.const_base & (self.const_base - 1) == 0, "the constant rows start at a power of two"
        rom = constrom.contents(isa)
        self.depth = self.const_base + len(rom)
        self.width = g["reg_bits"]
        self.mem = Memory(self.width, self.depth, init=[0] * self.const_base + rom, name="rf")
        self.specials += self.mem
        self.ra = self.mem.get_port(has_re=False)           # read A (sync)
        self.rb = self.mem.get_port(has_re=False)           # read B (sync)
        self.wa = self.mem.get_port(write_capable=True)     # ALU / CSWAP's first register / bus
        self.wb = self.mem.get_port(write_capable=True)     # CSWAP's second register
        self.wm = self.mem.get_port(write_capable=True)     # multipliers
        self.specials += self.ra, self.rb, self.wa, self.wb, self.wm
