"""Windowed register file: 16 windows x 32 registers x 256 bits (geometry from the spec), two
synchronous read ports (address in cycle t, data in cycle t + 1), three write ports: the ALU
(and bus), CSWAP's second register, the multipliers. A write at the edge ending cycle t is seen
by a read addressed in cycle t + 1 (distinct edges, no collision)."""

from __future__ import annotations

from migen import Memory, Module

from . import spec


class RegFile(Module):
    def __init__(self):
        g = spec.load().geometry
        self.depth = g["windows"] * g["regs_per_window"]
        self.width = g["reg_bits"]
        self.mem = Memory(self.width, self.depth, name="rf")
        self.specials += self.mem
        self.ra = self.mem.get_port(has_re=False)           # read A (sync)
        self.rb = self.mem.get_port(has_re=False)           # read B (sync)
        self.wa = self.mem.get_port(write_capable=True)     # ALU / bus
        self.wb = self.mem.get_port(write_capable=True)     # CSWAP's second register
        self.wm = self.mem.get_port(write_capable=True)     # multipliers
        self.specials += self.ra, self.rb, self.wa, self.wb, self.wm
