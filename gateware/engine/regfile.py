"""Windowed register file: 16 windows x 32 registers x 256 bits (geometry from the spec), followed
by read-only rows: the constant ROM's 32 slots (constrom.py; row `const_base` + slot) and the
ALU's hardware rows (zero, one, p: alu.hardware_rows(), what the B port reads for ops whose B
operand is not an instruction field). Two synchronous read ports (address in cycle t, data in
cycle t + 1), three write ports: the ALU (and bus, and CSWAP's first register), CSWAP's second
register, the multipliers. A write at the edge ending cycle t is seen by a read addressed in
cycle t + 1 (distinct edges, no collision). Writers address only the windows' rows (their
addresses are 9 bits wide)."""

from __future__ import annotations

from migen import Memory, Module

from . import alu, constrom, spec


def layout(isa: str) -> tuple[int, dict[int, int], list[int]]:
    """(const_base, {B_* kind: row}, initial contents of every row)."""
    g = spec.load().geometry
    base = g["windows"] * g["regs_per_window"]
    assert base & (base - 1) == 0, "the constant rows start at a power of two"
    rom = constrom.contents(isa)
    hw = alu.hardware_rows()
    rows = {kind: base + len(rom) + i for i, kind in enumerate(hw)}
    return base, rows, [0] * base + rom + list(hw.values())


class RegFile(Module):
    def __init__(self, isa: str):
        g = spec.load().geometry
        self.const_base, self.hw_rows, init = layout(isa)
        self.depth = len(init)
        self.width = g["reg_bits"]
        self.mem = Memory(self.width, self.depth, init=init, name="rf")
        self.specials += self.mem
        self.ra = self.mem.get_port(has_re=False)           # read A (sync)
        self.rb = self.mem.get_port(has_re=False)           # read B (sync)
        self.wa = self.mem.get_port(write_capable=True)     # ALU / CSWAP's first register / bus
        self.wb = self.mem.get_port(write_capable=True)     # CSWAP's second register
        self.wm = self.mem.get_port(write_capable=True)     # multipliers
        self.specials += self.ra, self.rb, self.wa, self.wb, self.wm
