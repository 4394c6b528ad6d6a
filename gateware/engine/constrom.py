"""Constant ROM: const_slots x 256 bits, the ISA's constant table from the spec (unlisted slots
read 0). Combinational lookup by slot index."""

from __future__ import annotations

from migen import Array, Module, Signal

from . import spec


class ConstRom(Module):
    def __init__(self, isa: str):
        rom = spec.load().isas[isa].const_rom
        self.slot = Signal(max=len(rom))
        self.value = Signal(256)
        self.comb += self.value.eq(Array(rom)[self.slot])
